#include "onnxproof/report/parity_report.h"

#include "onnxproof/report/detection_report.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "onnxproof/core/source_framework.h"

namespace onnxproof {

namespace {

nlohmann::json step_count_to_json(const StepCount& count) {
  return {{"elements", count.elements}, {"zero", count.zero},     {"one", count.one},
          {"over", count.over},         {"max", count.max_steps}, {"off_grid", count.off_grid}};
}

// The steps rule's figures (docs/quantization.md): ONNX Runtime's step histogram against PyTorch,
// PyTorch's own against its float64 twin, and what the rule allowed.
nlohmann::json steps_to_json(const StepCount& onnx, const std::optional<StepCount>& pytorch,
                             const StepAllowance& allowed) {
  return {
      {"onnx", step_count_to_json(onnx)},
      {"source", pytorch ? step_count_to_json(*pytorch) : nlohmann::json(nullptr)},
      {"allowed_max", allowed.max_steps},
      {"allowed_share", allowed.share},
      {"allowed_over_share", allowed.over_share >= 0.0 ? nlohmann::json(allowed.over_share) : nlohmann::json(nullptr)}};
}

}  // namespace

nlohmann::json parity_rows_to_json(const ParityResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : result.rows) {
    const auto& cmp = row.comparison;
    nlohmann::json entry = {{"case", row.data_set},     {"sizes", row.sizes},
                            {"provider", row.provider}, {"optimization", optimization_name(row.optimization)},
                            {"output", row.output},     {"status", row_status_name(row.status)}};
    if (!row.precision.empty()) entry["precision"] = row.precision;  // what OpenVINO computed in
    if (row.compared()) {
      entry.update({{"rtol", row.tolerance.rtol},
                    {"atol", row.tolerance.atol},
                    {"max_abs", cmp.max_abs},
                    {"max_rel", cmp.max_rel},
                    {"mismatches", cmp.mismatches},
                    {"elements", cmp.elements},
                    {"mismatch_fraction",
                     cmp.elements ? static_cast<double>(cmp.mismatches) / static_cast<double>(cmp.elements) : 0.0},
                    {"worst_index", cmp.worst_index},
                    {"worst_at", row.worst_at},
                    {"allclose", cmp.allclose},
                    {"nan_mismatch", cmp.nan_mismatches},
                    {"shape_match", cmp.shape_match},
                    {"dtype_match", cmp.dtype_match},
                    {"expected_shape", row.expected_shape},
                    {"actual_shape", row.actual_shape},
                    {"argmax_flips", row.argmax ? nlohmann::json(row.argmax->flips) : nlohmann::json(nullptr)},
                    {"argmax_ties", row.argmax ? nlohmann::json(row.argmax->ties) : nlohmann::json(nullptr)},
                    {"rows", row.argmax ? nlohmann::json(row.argmax->rows) : nlohmann::json(nullptr)},
                    {"rule", rule_name(row.rule)}});
      if (row.exact) {
        // The calibrated rule's figures: distances from the float64 answer and their ratio.
        const auto ratio = row.exact->ratio();
        entry.update({{"onnx_error", row.exact->onnx},
                      {"source_error", row.exact->pytorch},
                      {"error_ratio", ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr)},
                      {"budget", row.exact->budget},
                      {"scale", row.exact->scale}});
      }
      if (row.steps) entry["steps"] = steps_to_json(*row.steps, row.pytorch_steps, *row.allowed_steps);
    } else {
      entry["note"] = row.note;
    }
    rows.push_back(std::move(entry));
  }
  return rows;
}

nlohmann::json parity_summary_to_json(const ParityResult& result) {
  nlohmann::json providers = nlohmann::json::array();
  for (const auto& p : result.providers)
    providers.push_back({{"provider", p.provider},
                         {"ran", p.ran},
                         {"reason", p.reason},
                         {"advisory", p.advisory},
                         {"precision", p.precision}});
  nlohmann::json accuracy = nlohmann::json::array();
  for (const auto& a : result.accuracy) {
    accuracy.push_back(
        {{"output", a.output}, {"samples", a.samples}, {"accuracy", a.accuracy}, {"flipped", a.flipped}});
  }
  // The rounding audit of a quantized model (quantize/rounding_audit.h), per provider and type pair.
  nlohmann::json rounding = nlohmann::json::array();
  for (const auto& audit : result.rounding) {
    rounding.push_back({{"provider", audit.provider},
                        {"input", dtype_name(audit.pair.input)},
                        {"output", dtype_name(audit.pair.output)},
                        {"values", audit.values},
                        {"mismatches", audit.mismatches},
                        {"mode", audit.mode},
                        {"example", audit.example},
                        {"error", audit.error}});
  }
  return {{"providers", providers}, {"accuracy", accuracy}, {"rounding", rounding}};
}

Verdict parity_verdict(const ParityResult& result) {
  return verdict_from(result.provider_not_run() == nullptr, result.passed());
}

nlohmann::json parity_result_to_json(const std::filesystem::path& model, const ParityResult& result) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : result.findings) findings.push_back(finding_to_json(finding));
  return {{"schema", "onnxproof.parity/2"},
          {"model", model.string()},
          {"verdict", verdict_name(parity_verdict(result))},
          {"summary", parity_summary_to_json(result)},
          {"findings", findings},
          {"parity", parity_rows_to_json(result)},
          {"detections", detection_rows_to_json(result)}};
}

void print_parity_result(std::ostream& out, const ParityResult& result) {
  for (const auto& p : result.providers) {
    if (!p.ran) out << fmt::format("provider {:<8} skipped: {}\n", p.provider, p.reason);
  }
  struct Group {
    int cases = 0;
    int passed = 0;
    int rejected = 0;
    double max_abs = 0.0;
    double max_rel = 0.0;
    int64_t flips = 0;
    std::optional<double> ratio;  // largest |ONNX - exact| / |PyTorch - exact| among calibrated rows
  };
  std::map<std::tuple<std::string, std::string_view, std::string>, Group> groups;
  for (const auto& row : result.rows) {
    auto& group =
        groups[{row.provider, optimization_name(row.optimization), row.output.empty() ? "(all)" : row.output}];
    ++group.cases;
    group.passed += row.status == RowStatus::pass;
    group.rejected += !row.compared();
    group.max_abs = std::max(group.max_abs, row.comparison.max_abs);
    group.max_rel = std::max(group.max_rel, row.comparison.max_rel);
    if (row.argmax) group.flips += row.argmax->flips;
    if (row.exact && row.exact->ratio()) group.ratio = std::max(group.ratio.value_or(0.0), *row.exact->ratio());
  }
  out << fmt::format("{:<9} {:<9} {:<16} {:>11} {:>9} {:>10} {:>10} {:>6} {:>9}\n", "provider", "graph opt", "output",
                     "cases pass", "refused", "max abs", "max rel", "flips", "vs exact");
  for (const auto& [key, g] : groups) {
    const auto& [provider, optimization, output] = key;
    out << fmt::format("{:<9} {:<9} {:<16} {:>5} / {:<3} {:>9} {:>10.3g} {:>10.3g} {:>6} {:>9}\n", provider,
                       optimization, output, g.passed, g.cases, g.rejected, g.max_abs, g.max_rel, g.flips,
                       g.ratio ? fmt::format("{:.3g}x", *g.ratio) : "-");
  }
  print_detection_summary(out, result);
  out << "vs exact: the largest distance of ONNX Runtime from the float64 answer, as a multiple of "
      << source_title(result.framework) << " float32's own; the calibrated rule allows " << k_noise_multiple
      << "x plus a floor\n";
  for (const auto& a : result.accuracy) {
    std::string figures;
    for (const auto& [who, value] : a.accuracy)
      figures += fmt::format("{}{} {:.1f}%", figures.empty() ? "" : ", ", who, 100.0 * value);
    out << fmt::format("accuracy of '{}' on {} labelled samples: {}; flipped predictions: {}\n", a.output, a.samples,
                       figures, a.flipped);
  }
}

}  // namespace onnxproof
