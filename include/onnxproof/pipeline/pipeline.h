#pragma once
// The pipeline: export -> check -> simplify -> ops -> parity -> golden into one run folder, with one Report written
// at the end (and when a step fails). Steps are declared in one list (pipeline.cpp); each reads
// the run folder and adds its results and findings to the report; no step calls another.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include "onnxproof/check/check_model.h"
#include "onnxproof/core/error.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/ops/support_table.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/pipeline/localize_case.h"
#include "onnxproof/pipeline/runtime_versions.h"
#include "onnxproof/report/report.h"

namespace onnxproof {

/// A run built out of sight: the staging folder that holds it and the folder it is published as.
struct StagedRun {
  std::filesystem::path staging;
  std::filesystem::path published;
};

/// What a caller adds to a proved run before it publishes (the command record, pipeline --repair):
/// it writes into `run.staging` only, and returns true when it changed the report, which is then
/// written again. Published files are never touched after the publish.
using BeforePublish = std::function<bool(Report& report, const StagedRun& run)>;

struct PipelineOptions {
  ExportOptions export_options;  // its `out` is the run folder
  ParityOptions parity;
  CheckOptions check;
  std::vector<SupportTable> targets;  // the operator audit's tables (--target)
  /// --target ort-cpu@VERSION: the releases the model is proved on again, each in a child with
  /// its library (runtime_versions.h); the export's default opset fits every one of them.
  std::vector<RuntimeRelease> releases{};
  ReleaseProofOptions release_proof{};
  /// After a parity failure, find where the outputs first diverge (report.localization).
  bool localize = true;
  /// Captures the module outputs localization compares with; unset: capture_module_outputs(),
  /// a child that loads the model again from export.json's spec (an attached front end captures
  /// from the model object it holds).
  CaptureModuleOutputs capture{};
  /// The golden step: false leaves it out (nothing frozen or verified; the headline says it was
  /// not asked for). The Python API's default; the command line's is true.
  bool golden = true;
  /// Where the golden set lives: empty, the run folder's golden/, carried from run to run; else
  /// a folder of the user's (kept in their repository), verified against when it holds a set and
  /// frozen into when it does not.
  std::filesystem::path golden_folder{};
  /// --quantize static: the export also quantized with ONNX Runtime's quantize_static into
  /// model.quant.onnx and proved in quantization steps (the quantize step); empty: not asked.
  std::string quantize{};
  /// The simplify step; false proves and ships the export as written (--no-simplify).
  bool simplify = true;
  /// --precision fp16: nodes the conversion keeps in float32 (--keep-float32).
  std::vector<std::string> keep_float32{};
  /// The folder the run's report names as its own; empty: where it is published. A repair's
  /// candidate is built inside a staged run and named where that run will be published.
  std::filesystem::path shown_as{};
  /// Runs once the run is proved and its report written in staging, before it publishes (not for
  /// --exporter both, whose two runs have no one command).
  BeforePublish before_publish{};
};

/// The default run folder for a model spec: onnxproof-out/NAME, NAME being "resnet18" for
/// torchvision:resnet18, "BertModel" for hf:BertModel:num_hidden_layers=1, "MobileNetV3Small" for
/// keras:MobileNetV3Small, "dir" for saved_model:path/to/dir, "model" for path/model.py:build,
/// model.pt or model.keras, "build" for package.module:build.
std::filesystem::path default_run_folder(const std::string& model_spec);

/// Runs every step in a staging folder beside OUT, writes the reports there and publishes it as
/// OUT in one step (the golden set of the run OUT held is verified and carried over); returns the
/// report. Fails only for usage errors (bad options, a malformed spec, an --out onnxproof may not
/// replace) and when the run cannot be written; everything else is in the report's steps and
/// findings. A run that fails that way, or is interrupted, leaves OUT as it was.
Expected<Report> run_pipeline(const PipelineOptions& options, std::ostream& progress);

}  // namespace onnxproof
