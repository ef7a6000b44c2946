// --quantize static: the proved export quantized afterwards (export/quantize_static.h) into
// OUT/model.quant.onnx and proved in quantization steps against ONNX's reference evaluator, on
// every provider, with the rounding audit; the quantization's own error against the source
// framework's float outputs is reported beside it (docs/quantization.md).
#include <fmt/format.h>

#include <fstream>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/quantize_static.h"
#include "onnxproof/quantize/grid.h"
#include "onnxproof/report/quantization_report.h"
#include "run.h"

namespace onnxproof::pipeline_run {

namespace {

constexpr std::string_view k_reference_title = "ONNX's reference evaluator";

// The quantization's own error (quantization.json, written by the front end), read as it is.
nlohmann::json quantization_error(const fs::path& reference) {
  std::ifstream in(reference / "quantization.json");
  const nlohmann::json document = nlohmann::json::parse(in, nullptr, false);
  return document.is_object() && document.contains("outputs") ? document["outputs"] : nlohmann::json::array();
}

}  // namespace

bool quantize_wanted(const Run& run) { return run.options.quantize == "static"; }

StepReport quantize_step(Run& run) {
  StepReport step{.name = "quantize"};
  if (!run.reference) return step_error(step, *run.reference_error);
  const fs::path quantized = run.out / "model.quant.onnx";
  const fs::path reference = run.out / "reference-quant";
  run.progress << "onnxproof pipeline: quantizing the model with ONNX Runtime's quantize_static (model.quant.onnx)\n"
               << std::flush;
  const ExportOptions& exported = run.options.export_options;
  auto quantization = quantize_static(run.model, quantized, run.out / "reference", reference, exported.python,
                                      exported.timeout_seconds);
  if (!quantization) return step_error(step, quantization.error());
  auto cases = read_reference(reference);
  if (!cases) return step_error(step, cases.error());
  cases->framework = std::string(k_reference_title);
  ParityOptions options = run.options.parity;
  options.progress = &run.progress;
  options.keep_cpu_outputs = false;
  options.compare_optimization_off = true;
  auto result = run_parity(quantized, *cases, options);
  if (!result) return step_error(step, result.error());
  for (auto& finding : result->findings) {
    finding.step = "quantize";
    finding.message = "model.quant.onnx: " + finding.message;
  }
  add_findings(run, result->findings);
  const auto census = read_quantization(quantized);
  const nlohmann::json errors = quantization_error(reference);
  step.status = result->passed() ? StepStatus::pass : StepStatus::fail;
  const std::string source = source_title(run.report.framework);
  step.reason = fmt::format(
      "model.quant.onnx ({} QuantizeLinear, {} DequantizeLinear) {} {} in quantization steps; "
      "quantization error: {}",
      census ? census->census.quantize : 0, census ? census->census.dequantize : 0,
      step.status == StepStatus::pass ? "matches" : "differs from", k_reference_title,
      quantization_error_summary(errors, source));
  if (const auto* missing = result->provider_not_run()) {
    step.status = StepStatus::error;
    step.reason = fmt::format("provider {} could not run: {}", missing->provider, missing->reason);
  }
  auto figures = std::make_shared<QuantizeFigures>();
  figures->proof = std::move(*result);
  figures->quantize_nodes = census ? census->census.quantize : 0;
  figures->dequantize_nodes = census ? census->census.dequantize : 0;
  figures->quantization_error = errors;
  step.result = figures;
  return step;
}

}  // namespace onnxproof::pipeline_run
