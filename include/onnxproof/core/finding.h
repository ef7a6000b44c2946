#pragma once
// Findings: what a step learned about the model (not errors of the tool). Every code comes from
// the one registry, data/finding_codes.json (code, default severity, meaning, fix hint), which the
// build turns into FindingCode; the Python front end reads the same file. Codes are a stable
// contract (DESIGN.md): add new ones, never rename.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "onnxproof/core/error.h"

namespace onnxproof {

enum class Severity { error, warning, info };

/// "error", "warning" or "info".
std::string_view severity_name(Severity severity);
std::optional<Severity> severity_from_name(std::string_view name);

enum class FindingCode {
#define ONNXPROOF_FINDING_CODE(identifier, name, severity, step, meaning, hint) identifier,
#include "onnxproof/core/finding_codes.inc"
#undef ONNXPROOF_FINDING_CODE
};

/// One registry entry.
struct FindingCodeInfo {
  FindingCode code;
  std::string_view name;  // "FROZEN_DIMENSION"
  Severity severity;      // the default
  std::string_view step;  // the step that usually finds it
  std::string_view meaning;
  std::string_view hint;
};

/// Every registered code, in the registry's order.
std::span<const FindingCodeInfo> finding_codes();
const FindingCodeInfo& finding_code_info(FindingCode code);
std::string_view finding_code_name(FindingCode code);
/// The code of a registered name; nullopt for a name the registry does not hold.
std::optional<FindingCode> finding_code_from_name(std::string_view name);

/// Structured facts behind a finding, for the steps that combine findings (never parse messages).
struct Evidence {
  std::string axis{};                      // the dynamic axis's label the finding is about
  std::map<std::string, int64_t> sizes{};  // the shape case's sizes by axis label
  std::string source{};                    // the user's file:line, when known

  bool empty() const { return axis.empty() && sizes.empty() && source.empty(); }
};

struct Finding {
  FindingCode code;
  Severity severity = Severity::error;
  std::string step{};     // the step that found it ("check", "export", ...)
  std::string message{};  // what is wrong, one line
  std::string where{};    // node, value, module or source line; may be empty
  std::string hint{};     // how to fix it; may be empty
  Evidence evidence{};

  std::string_view code_name() const { return finding_code_name(code); }
};

/// True if any finding has severity error.
bool has_errors(const std::vector<Finding>& findings);

/// True if a finding with this code (and, when given, this severity) is among `findings`.
bool has_finding(const std::vector<Finding>& findings, FindingCode code,
                 std::optional<Severity> severity = std::nullopt);

/// A finding as JSON (the report's schema): code, severity, step, message, where, hint, and
/// evidence when it has any.
nlohmann::json finding_to_json(const Finding& finding);

/// True when a finding's `where` is a line of the user's code ("model.py:11: n = int(x.shape[0])",
/// as the tracer's warnings name it), not a graph node or a module.
bool names_source_line(std::string_view where);

/// A finding from JSON written by the front end; an unregistered code or a missing field is an
/// error naming `context` and the field ("export.json: findings[2].code").
Expected<Finding> finding_from_json(const nlohmann::json& json, const std::string& context);

}  // namespace onnxproof
