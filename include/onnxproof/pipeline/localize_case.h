#pragma once
// Localizing one failing parity comparison in a run folder: the ONNX Runtime optimizer behind it
// (when the case passes with optimizations disabled) and the module where the outputs first
// diverge. One implementation for the pipeline (after a parity failure) and `onnxproof localize`.

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "onnxproof/core/error.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/parity/parity.h"

namespace onnxproof {

/// The front end's half of localization: the source framework's module outputs on reference case
/// `data_set`, written to RUN/localize/ for the ONNX model `model_file` (relative to RUN).
using CaptureModuleOutputs = std::function<Expected<void>(const std::filesystem::path& run,
                                                          const std::string& model_file, const std::string& data_set)>;

struct LocalizeCaseOptions {
  std::filesystem::path run;             // the run folder (a pipeline's staging folder while it runs)
  std::filesystem::path model;           // the model the run proved, inside `run`
  ParityRow target;                      // the comparison to localize: case, provider, optimization level
  const ParityResult* parity = nullptr;  // the run's rows: whether the case passes unoptimized
  ToleranceOptions tolerance{};
  CaptureModuleOutputs capture{};
  std::ostream* progress = nullptr;  // the pipeline's progress lines; null: none
  std::string framework{};           // the run's source framework, as the findings name it (empty: torch)
};

/// What localizing a case found; each half can fail on its own and the callers treat that apart.
struct LocalizedCase {
  /// The optimizer that changes the case (a finding naming it, or saying none alone does);
  /// nullopt when the case fails without optimizations too.
  Expected<std::optional<Finding>> optimizer = std::optional<Finding>{};
  /// The module comparison (seconds: capture and comparison); RUN/localize/localization.json written.
  Expected<Localization> localization = fail(ErrorCode::internal, "not localized");
};

/// The default capture: the Python front end (capture_module_outputs) of `framework`'s models, in
/// `python` or else that framework's interpreter, ended after `timeout_seconds`.
CaptureModuleOutputs python_capture(const std::string& python, const std::string& framework, double timeout_seconds);

/// Names the optimizer (when the case passes unoptimized), captures the modules' outputs and
/// compares them module by module on `c`, the reference case of options.target.
LocalizedCase localize_case(const LocalizeCaseOptions& options, const ReferenceCase& c);

}  // namespace onnxproof
