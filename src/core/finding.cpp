#include "onnxproof/core/finding.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <nlohmann/json.hpp>

namespace onnxproof {

namespace {

constexpr std::array k_registry = {
#define ONNXPROOF_FINDING_CODE(identifier, name, severity, step, meaning, hint) \
  FindingCodeInfo{FindingCode::identifier, name, Severity::severity, step, meaning, hint},
#include "onnxproof/core/finding_codes.inc"
#undef ONNXPROOF_FINDING_CODE
};

}  // namespace

std::string_view severity_name(Severity severity) {
  switch (severity) {
    case Severity::error:
      return "error";
    case Severity::warning:
      return "warning";
    case Severity::info:
      return "info";
  }
  return "error";
}

std::optional<Severity> severity_from_name(std::string_view name) {
  for (const Severity severity : {Severity::error, Severity::warning, Severity::info}) {
    if (severity_name(severity) == name) return severity;
  }
  return std::nullopt;
}

std::span<const FindingCodeInfo> finding_codes() { return k_registry; }

const FindingCodeInfo& finding_code_info(FindingCode code) { return k_registry.at(static_cast<std::size_t>(code)); }

std::string_view finding_code_name(FindingCode code) { return finding_code_info(code).name; }

std::optional<FindingCode> finding_code_from_name(std::string_view name) {
  for (const auto& info : k_registry) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

bool has_errors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::error; });
}

bool has_finding(const std::vector<Finding>& findings, FindingCode code, std::optional<Severity> severity) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.code == code && (!severity || f.severity == *severity); });
}

nlohmann::json finding_to_json(const Finding& finding) {
  nlohmann::json json = {{"code", finding.code_name()}, {"severity", severity_name(finding.severity)},
                         {"step", finding.step},        {"message", finding.message},
                         {"where", finding.where},      {"hint", finding.hint}};
  if (!finding.evidence.empty()) {
    nlohmann::json evidence = nlohmann::json::object();
    if (!finding.evidence.axis.empty()) evidence["axis"] = finding.evidence.axis;
    if (!finding.evidence.sizes.empty()) evidence["sizes"] = finding.evidence.sizes;
    if (!finding.evidence.source.empty()) evidence["source"] = finding.evidence.source;
    json["evidence"] = std::move(evidence);
  }
  return json;
}

Expected<Finding> finding_from_json(const nlohmann::json& json, const std::string& context) {
  const auto text = [&](const char* field, bool required) -> Expected<std::string> {
    if (!json.is_object() || !json.contains(field)) {
      if (!required) return std::string();
      return fail(ErrorCode::invalid_input, context + "." + field + " is missing");
    }
    if (!json[field].is_string()) return fail(ErrorCode::invalid_input, context + "." + field + " is not a string");
    return json[field].get<std::string>();
  };
  ONNXPROOF_TRY_ASSIGN(const std::string code_name, text("code", true));
  const auto code = finding_code_from_name(code_name);
  if (!code) {
    return fail(ErrorCode::invalid_input,
                context + ".code '" + code_name + "' is not in the registry (data/finding_codes.json)");
  }
  ONNXPROOF_TRY_ASSIGN(const std::string severity_text, text("severity", true));
  const auto severity = severity_from_name(severity_text);
  if (!severity) {
    return fail(ErrorCode::invalid_input, context + ".severity '" + severity_text + "' is not error, warning or info");
  }
  Finding finding{*code, *severity};
  ONNXPROOF_TRY_ASSIGN(finding.step, text("step", true));
  ONNXPROOF_TRY_ASSIGN(finding.message, text("message", true));
  ONNXPROOF_TRY_ASSIGN(finding.where, text("where", false));
  ONNXPROOF_TRY_ASSIGN(finding.hint, text("hint", false));
  const auto evidence = json.value("evidence", nlohmann::json::object());
  try {
    finding.evidence.axis = evidence.value("axis", "");
    finding.evidence.source = evidence.value("source", "");
    finding.evidence.sizes = evidence.value("sizes", std::map<std::string, int64_t>{});
  } catch (const nlohmann::json::exception&) {
    return fail(ErrorCode::invalid_input, context + ".evidence has a field of the wrong type");
  }
  return finding;
}

bool names_source_line(std::string_view where) {
  const auto py = where.find(".py:");
  return py != std::string_view::npos && py + 4 < where.size() &&
         std::isdigit(static_cast<unsigned char>(where[py + 4]));
}

}  // namespace onnxproof
