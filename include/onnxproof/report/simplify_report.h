#pragma once
// Writers for the simplify step: the report's step details and the terminal summary.

#include <ostream>

#include <nlohmann/json.hpp>

#include "onnxproof/simplify/simplify.h"

namespace onnxproof {

/// The simplify step's details in report.json: nodes and operators before and after, bytes,
/// changes per pass, the rules that changed something with their changes ("rules"), rounds, and
/// the proof's cases and largest difference.
nlohmann::json simplify_outcome_to_json(const SimplifyOutcome& outcome);

/// The terminal summary of `onnxproof simplify`: changes per pass and, under each, the rules
/// that changed something, nodes per operator that
/// changed, bytes, the proof and its findings, and what was written to `output`.
void print_simplify_outcome(std::ostream& out, const SimplifyOutcome& outcome, const std::filesystem::path& output);

/// report.md's section listing the rules that changed something and their changes, read from
/// the simplify step's details (simplify_outcome_to_json); empty when none did.
std::string simplify_rules_to_markdown(const nlohmann::json& details);

/// The same section for report.html.
std::string simplify_rules_to_html(const nlohmann::json& details);

}  // namespace onnxproof
