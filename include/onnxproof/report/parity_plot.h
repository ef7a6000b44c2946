#pragma once
// A picture of the parity proof: the largest absolute error of every case, per provider and
// optimization level, on a log scale, failures in red. Written beside report.md as an SVG.

#include <string>

#include <vector>

#include "onnxproof/parity/parity.h"

namespace onnxproof {

/// An SVG bar chart of the parity rows (max_abs per case, the largest over its outputs); empty
/// when no row has figures.
std::string parity_plot_svg(const std::vector<ParityRow>& rows);

}  // namespace onnxproof
