#pragma once
// Writers for the simplify step: its figures in report.json (step_figures.h's SimplifyFigures adds
// how it was proved) and `onnxproof simplify`'s terminal summary.

#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "onnxproof/simplify/simplify.h"

namespace onnxproof {

/// The rules that changed something, by name, with their changes (a name in two passes: the last
/// one's): report.json's "rules" and the report's "Simplify rules" section.
std::map<std::string, int> changed_rules(const SimplifyResult& result);

/// The simplify step's figures in report.json: nodes and operators before and after, bytes,
/// changes per pass, the rules that changed something with their changes ("rules"), rounds, and
/// the proof's cases and largest difference.
nlohmann::json simplify_outcome_to_json(const SimplifyOutcome& outcome);

/// The terminal summary of `onnxproof simplify`: changes per pass and, under each, the rules
/// that changed something, nodes per operator that
/// changed, bytes, the proof and its findings, and what was written to `output`.
void print_simplify_outcome(std::ostream& out, const SimplifyOutcome& outcome, const std::filesystem::path& output);

}  // namespace onnxproof
