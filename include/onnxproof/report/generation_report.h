#pragma once
// The generation proof in the report: the generate step's details (report.json), its per-step
// table (Markdown, HTML) and the error by step (report-generate.svg).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/parity/generation.h"

namespace onnxproof {

/// The generate step's details (report.json lists them in the step's object): {"steps",
/// "providers": [{provider, rule, passed, identical_steps, first_token_difference, first_failure,
/// ..., "table": [one object per step]}]}.
nlohmann::json generation_to_json(int steps, const std::vector<GenerationResult>& results);

/// The per-step table under a heading, from the step's details; "" when they hold no table. The
/// reference is named by its source `framework` (Report::framework; empty: PyTorch).
std::string generation_to_markdown(const nlohmann::json& details, const std::string& framework);
std::string generation_to_html(const nlohmann::json& details, const std::string& framework);

/// The error by step, one panel per provider (red: a failing step); "" when there is no step.
std::string generation_plot_svg(const nlohmann::json& details, const std::string& framework);

}  // namespace onnxproof
