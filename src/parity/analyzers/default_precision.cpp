// RUNTIME_DEFAULT_PRECISION: what a runtime's default configuration does to the numbers, from the
// advisory rows beside the float32 proof (OpenVINO's CPU plugin computes in bfloat16 or float16 by
// default where the processor has them). One finding per advisory provider and output: info when
// every row holds the budget of the precision it computed in and no prediction changed, a warning
// otherwise. The float32 rows gate the verdict; these say what the default would ship.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analyzer.h"

namespace onnxproof::parity_analyzers {

namespace {

constexpr const char* k_hint =
    "for float32 numerics set INFERENCE_PRECISION_HINT=f32 where the application compiles the model (Python: "
    "core.compile_model(path, \"CPU\", {\"INFERENCE_PRECISION_HINT\": \"f32\"}); C++: core.compile_model(path, "
    "\"CPU\", ov::hint::inference_precision(ov::element::f32))); --provider openvino:default makes these rows the "
    "proof";

struct OutputSummary {
  std::string precision;
  int rows = 0;
  int failed = 0;
  double worst_relative = 0.0;  // max |runtime - exact| / max |exact| over the rows
  int64_t predictions = 0;      // argmax rows compared
  int64_t changed = 0;          // argmax rows that differ from PyTorch's, flips and ties
};

std::string precision_title(const std::string& precision) {
  if (precision == "bf16") return "bfloat16";
  if (precision == "f16") return "float16";
  if (precision == "f32") return "float32";
  return precision.empty() ? "an unreported precision" : precision;
}

double relative_error(const ParityRow& row) {
  if (row.exact && row.exact->scale > 0.0) return row.exact->onnx / row.exact->scale;
  return row.comparison.max_rel;
}

}  // namespace

void add_default_precision_findings(const AnalyzerInput& in) {
  const auto& result = in.result;
  std::map<std::pair<std::string, std::string>, OutputSummary> summaries;  // (provider, output)
  for (const auto& row : result.rows) {
    if (!result.advisory(row.provider) || !row.compared()) continue;
    auto& summary = summaries[{row.provider, row.output}];
    summary.precision = row.precision;
    ++summary.rows;
    summary.failed += row.status != RowStatus::pass;
    summary.worst_relative = std::max(summary.worst_relative, relative_error(row));
    if (row.argmax) {
      summary.predictions += row.argmax->rows;
      summary.changed += row.argmax->flips + row.argmax->ties;
    }
  }
  // A default configuration that cannot even compile the model (OpenVINO 2026.4's CPU plugin in
  // bfloat16 on some QDQ graphs): what the application would meet first.
  const bool float32_ran = std::any_of(result.providers.begin(), result.providers.end(),
                                       [](const ProviderStatus& p) { return p.provider == "openvino" && p.ran; });
  for (const auto& status : result.providers) {
    if (!status.advisory || status.ran) continue;
    in.result.findings.push_back(
        {FindingCode::runtime_default_precision, Severity::warning, "parity",
         "OpenVINO's default configuration on this CPU cannot run the model: " + status.reason +
             (float32_ran ? "; compiled with INFERENCE_PRECISION_HINT=f32 (the 'openvino' rows) it runs" : ""),
         status.provider, k_hint});
  }
  // Detection sets: matched as sets, each case held or not; their precision is the rows' own.
  for (const auto& row : result.detections) {
    if (!result.advisory(row.provider) || !row.note.empty()) continue;
    auto& summary = summaries[{row.provider, row.boxes}];
    const auto& status = *std::find_if(result.providers.begin(), result.providers.end(),
                                       [&](const ProviderStatus& p) { return p.provider == row.provider; });
    summary.precision = status.precision;
    ++summary.rows;
    summary.failed += !row.passed;
  }
  for (const auto& [key, summary] : summaries) {
    const auto& [provider, output] = key;
    // Where the float32 rows already fail, that finding says what is wrong; precision is not it.
    const bool float32_fails =
        in.groups.failed.contains(RowKey{"openvino", GraphOptimization::all, output}) ||
        std::any_of(result.detections.begin(), result.detections.end(), [&](const DetectionRow& row) {
          return row.provider == "openvino" && row.boxes == output && !row.passed;
        });
    if (float32_fails) continue;
    const bool holds = summary.failed == 0 && summary.changed == 0;
    const std::string predictions =
        summary.predictions > 0 ? fmt::format(", {} of {} predictions changed", summary.changed, summary.predictions)
                                : "";
    const std::string message = fmt::format(
        "OpenVINO's default configuration on this CPU computes in {}: output '{}' within {:.3g}% of exact{}; {} of "
        "{} cases hold the budget of {} ({} rows); compiled with INFERENCE_PRECISION_HINT=f32 (the 'openvino' rows, "
        "the proof) they pass",
        precision_title(summary.precision), output, 100.0 * summary.worst_relative, predictions,
        summary.rows - summary.failed, summary.rows, precision_title(summary.precision), provider);
    in.result.findings.push_back({FindingCode::runtime_default_precision, holds ? Severity::info : Severity::warning,
                                  "parity", message, output, k_hint});
  }
}

}  // namespace onnxproof::parity_analyzers
