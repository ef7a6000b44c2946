#pragma once
// A picture of the parity proof: the largest absolute error of every case, per provider and
// optimization level, on a log scale, failures in red. Written beside report.md as an SVG.

#include <string>

#include <nlohmann/json.hpp>

namespace onnxproof {

/// An SVG bar chart of the report's parity[] rows (max_abs per case, the largest over its outputs);
/// empty when no row has figures.
std::string parity_plot_svg(const nlohmann::json& parity_rows);

}  // namespace onnxproof
