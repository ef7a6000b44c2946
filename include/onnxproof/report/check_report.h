#pragma once
// Writers for the check step's result: a terminal summary and JSON.

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "onnxproof/check/check_model.h"
#include "onnxproof/core/finding.h"

namespace onnxproof {

/// The check result as JSON (schema "onnxproof.check/1"): verdict, checker and shape inference
/// status, summary, findings and tool versions.
nlohmann::json check_result_to_json(const LoadedModel& model, const CheckResult& result);

/// The human summary printed by `onnxproof check`.
void print_check_result(std::ostream& out, const LoadedModel& model, const CheckResult& result);

/// The findings block of the terminal output: "findings N" then severity, code, message, where,
/// hint per finding ("findings none" when empty).
void print_findings(std::ostream& out, const std::vector<Finding>& findings);

/// One finding's lines: `prefix`, severity, code and message; then where and hint, indented.
void print_findings_lines(std::ostream& out, const Finding& finding, const std::string& prefix);

/// "46.8 MB" style byte counts (powers of 1000, as file managers show).
std::string format_bytes(uint64_t bytes);

}  // namespace onnxproof
