#include "onnxproof/pipeline/localize_case.h"

#include <chrono>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/report/localize_report.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The case passed with ONNX Runtime's optimizations disabled: which optimizer changes it. (The
// module comparison cannot always tell: exposing a value as an output keeps ONNX Runtime from
// fusing across it.)
Expected<std::optional<Finding>> name_the_optimizer(const LocalizeCaseOptions& options, const ReferenceCase& c) {
  const ParityRow& row = options.target;
  if (!options.parity || !passes_without_optimizations(*options.parity, row)) return std::nullopt;
  if (options.progress)
    *options.progress << "onnxproof pipeline: naming the ONNX Runtime optimizer (" << row.data_set << ")\n"
                      << std::flush;
  SessionOptions session;
  session.provider = row.provider;
  ONNXPROOF_TRY_ASSIGN(const OptimizerSearch search,
                       find_optimizer_changing_outputs(options.model, c, session, options.tolerance));
  return optimizer_finding(search, row.data_set, row.provider, options.framework);
}

Expected<Localization> compare_modules(const LocalizeCaseOptions& options, const ReferenceCase& c) {
  const ParityRow& row = options.target;
  ONNXPROOF_TRY(options.capture(options.run, options.model.filename().string(), row.data_set));
  LocalizeOptions localize{.tolerance = options.tolerance, .framework = options.framework};
  localize.session.provider = row.provider;
  localize.session.optimization = row.optimization;
  ONNXPROOF_TRY_ASSIGN(Localization localization, localize_divergence(options.run, options.model, c, localize));
  const fs::path folder = options.run / "localize";
  ONNXPROOF_TRY(write_file_atomically(folder / "localization.json", localization_to_json(localization).dump(1) + "\n"));
  // Node by node, and as Model Explorer's overlay of the whole graph (docs/report.md).
  ONNXPROOF_TRY(
      write_file_atomically(folder / "node_errors.json", node_errors_to_json(localization.node_errors).dump(1) + "\n"));
  ONNXPROOF_TRY(
      write_file_atomically(folder / "model_explorer_node_data.json",
                            model_explorer_node_data(localization.graph, localization.node_errors).dump(1) + "\n"));
  return localization;
}

}  // namespace

CaptureModuleOutputs python_capture(const std::string& python, const std::string& framework, double timeout_seconds) {
  return [=](const fs::path& run, const std::string& model_file, const std::string& data_set) {
    return capture_module_outputs(run, model_file, data_set, framework, python, timeout_seconds);
  };
}

LocalizedCase localize_case(const LocalizeCaseOptions& options, const ReferenceCase& c) {
  LocalizedCase localized;
  localized.optimizer = name_the_optimizer(options, c);
  if (options.progress)
    *options.progress << "onnxproof pipeline: localize (" << options.target.data_set << ", " << options.target.provider
                      << ")\n"
                      << std::flush;
  const auto start = std::chrono::steady_clock::now();
  localized.localization = compare_modules(options, c);
  if (localized.localization)
    localized.localization->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return localized;
}

}  // namespace onnxproof
