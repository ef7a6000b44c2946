#include "onnxproof/report/check_report.h"

#include "onnxproof/core/verdict.h"

#include <fmt/format.h>

#include "onnxproof/report/versions.h"

namespace onnxproof {
namespace {

std::string format_dims(const ValueSummary& value) {
  if (!value.has_shape) return "(rank unknown)";
  if (value.dims.empty()) return "scalar";
  std::string text;
  for (std::size_t i = 0; i < value.dims.size(); ++i) {
    if (i > 0) text += " x ";
    const auto& dim = value.dims[i];
    text += dim.size ? std::to_string(*dim.size) : (dim.symbol.empty() ? "?" : dim.symbol);
  }
  return text;
}

nlohmann::json value_to_json(const ValueSummary& value) {
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& dim : value.dims) {
    if (dim.size)
      dims.push_back(*dim.size);
    else if (!dim.symbol.empty())
      dims.push_back(dim.symbol);
    else
      dims.push_back(nullptr);
  }
  return {{"name", value.name}, {"type", value.type}, {"shape", value.has_shape ? dims : nlohmann::json(nullptr)}};
}

const char* status_word(bool passed) { return passed ? "pass" : "fail"; }

}  // namespace

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " B";
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1000.0 && unit < 3) {
    value /= 1000.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

void print_findings(std::ostream& out, const std::vector<Finding>& findings) {
  if (findings.empty()) {
    out << "findings         none\n";
    return;
  }
  out << fmt::format("findings         {}\n", findings.size());
  for (const auto& finding : findings) print_findings_lines(out, finding, "  ");
}

void print_findings_lines(std::ostream& out, const Finding& finding, const std::string& prefix) {
  const std::string indent(prefix.size() + 8, ' ');
  out << fmt::format("{}{:<7} {}: {}\n", prefix, severity_name(finding.severity), finding.code_name(), finding.message);
  if (!finding.where.empty()) out << fmt::format("{}where: {}\n", indent, finding.where);
  if (!finding.hint.empty()) out << fmt::format("{}hint: {}\n", indent, finding.hint);
}

nlohmann::json check_result_to_json(const LoadedModel& model, const CheckResult& result) {
  const auto& summary = result.summary;
  nlohmann::json opsets = nlohmann::json::object();
  for (const auto& [domain, version] : summary.opset_imports) opsets[domain] = version;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& value : summary.inputs) inputs.push_back(value_to_json(value));
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& value : summary.outputs) outputs.push_back(value_to_json(value));
  nlohmann::json operators = nlohmann::json::array();
  for (const auto& op : summary.operators) {
    operators.push_back({{"domain", op.domain},
                         {"op_type", op.op_type},
                         {"opset", op.opset},
                         {"count", op.count},
                         {"in_subgraphs", op.in_subgraphs}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : result.findings) findings.push_back(finding_to_json(finding));
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [tool, version] : tool_versions()) versions[tool] = version;

  return {
      {"schema", "onnxproof.check/1"},
      {"model", model.path.string()},
      {"verdict", verdict_name(verdict_from(result.findings))},
      {"checker", status_word(result.checker_passed)},
      {"shape_inference", status_word(result.shape_inference_passed)},
      {"summary",
       {{"ir_version", summary.ir_version},
        {"producer", summary.producer},
        {"opset_imports", opsets},
        {"inputs", inputs},
        {"outputs", outputs},
        {"node_count", summary.node_count},
        {"operators", operators},
        {"initializer_count", summary.initializer_count},
        {"initializer_bytes", summary.initializer_bytes},
        {"external_data_bytes", summary.external_bytes},
        {"file_bytes", model.file_bytes}}},
      {"findings", findings},
      {"versions", versions},
  };
}

void print_check_result(std::ostream& out, const LoadedModel& model, const CheckResult& result) {
  const auto& summary = result.summary;
  out << fmt::format("model            {} ({}, IR version {}, producer {})\n", model.path.string(),
                     format_bytes(model.file_bytes + model.external_bytes), summary.ir_version,
                     summary.producer.empty() ? "unknown" : summary.producer);
  std::string opsets;
  for (const auto& [domain, version] : summary.opset_imports) {
    opsets += fmt::format("{}{} {}", opsets.empty() ? "" : ", ", domain, version);
  }
  out << fmt::format("opset imports    {}\n", opsets);

  std::size_t width = 4;
  for (const auto& v : summary.inputs) width = std::max(width, v.name.size());
  for (const auto& v : summary.outputs) width = std::max(width, v.name.size());
  const auto print_values = [&](const char* title, const std::vector<ValueSummary>& values) {
    out << fmt::format("{:<17}{}\n", title, values.size());
    for (const auto& v : values) out << fmt::format("  {:<{}}  {:<9} {}\n", v.name, width, v.type, format_dims(v));
  };
  print_values("inputs", summary.inputs);
  print_values("outputs", summary.outputs);

  out << fmt::format("operators        {} nodes, {} operator types\n", summary.node_count, summary.operators.size());
  std::size_t op_width = 8;
  for (const auto& op : summary.operators) op_width = std::max(op_width, op.domain.size() + 2 + op.op_type.size());
  out << fmt::format("  {:<{}}  {:>5}  {:>5}\n", "operator", op_width, "opset", "count");
  for (const auto& op : summary.operators) {
    out << fmt::format("  {:<{}}  {:>5}  {:>5}{}\n", op.domain + "::" + op.op_type, op_width, op.opset, op.count,
                       op.in_subgraphs ? fmt::format("  ({} in subgraphs)", op.in_subgraphs) : "");
  }
  out << fmt::format(
      "initializers     {} tensors, {}{}\n", summary.initializer_count, format_bytes(summary.initializer_bytes),
      summary.external_bytes ? fmt::format(" ({} in external data)", format_bytes(summary.external_bytes)) : "");
  out << fmt::format("checker          {}\n", status_word(result.checker_passed));
  out << fmt::format("shape inference  {}\n", status_word(result.shape_inference_passed));
  print_findings(out, result.findings);
  out << fmt::format("verdict          {}\n", has_errors(result.findings) ? "fail" : "pass");
}

}  // namespace onnxproof
