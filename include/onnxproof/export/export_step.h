#pragma once
// The export step: runs the Python front end (python/onnxproof) as a child process to turn a
// PyTorch or TensorFlow model into OUT/model.onnx, OUT/reference/ and OUT/export.json, and reads
// the result.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxproof/check/frozen_shapes.h"
#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/core/given_file.h"
#include "onnxproof/core/run_folder.h"  // require_replaceable_run_folder

namespace onnxproof {

// The contract with the Python front end (python/onnxproof/core/contract.py, ARCHITECTURE.md): the
// configuration passed to it and the manifest it writes, each named by a versioned schema.
inline constexpr std::string_view k_config_contract = "onnxproof.config/1";
inline constexpr std::string_view k_export_schema = "onnxproof.export/1";

/// --input NAME=DIMS:DTYPE[:LO..HI], e.g. "ids=2x16:int64:0..30522".
struct InputSpec {
  std::string name;
  std::vector<int64_t> dims;
  std::string dtype;
  std::optional<std::pair<int64_t, int64_t>> range;  // [low, high) for generated integers
};

/// --dynamic NAME:AXIS=LABEL[:MIN..MAX], e.g. "x:0=batch" or "x:0=batch:1..64".
struct DynamicAxis {
  std::string input;
  int64_t axis = 0;
  std::string label;
  /// The sizes the axis may take, both ends included: the dynamo exporter's Dim range, and the
  /// bounds of the sizes it is proved at.
  std::optional<std::pair<int64_t, int64_t>> range;
};

/// A file a model spec names exists (FILE.py:CALLABLE, .pt, .pth, .keras, saved_model:DIR):
/// ErrorCode::usage naming it otherwise. Checked after the options, before any run folder is made.
Expected<void> validate_model_file(const std::string& spec);

/// The families a spec may name by prefix, which bring their own default inputs: torchvision:NAME,
/// timm:NAME, hf:CLASS[:key=value,...] (python/onnxproof/torch/families.py), keras:NAME[:...]
/// (Keras's applications, python/onnxproof/tensorflow/).
inline constexpr std::array<std::string_view, 4> k_model_families = {"torchvision", "timm", "hf", "keras"};

/// A model spec of one of k_model_families.
bool is_model_family(std::string_view spec);

/// The source framework whose front end loads `spec` (core/source_framework.h's names), by the
/// rule the front end's core/frameworks.py applies: "tensorflow" for keras:NAME[...],
/// saved_model:DIR, a path ending in .keras, and a FILE.py:CALLABLE spec whose file has a line
/// `import` or `from` tensorflow, keras or tf_keras; "torch" for everything else, including a
/// FILE.py that cannot be read (the front end then names the error). Reads that file only.
std::string source_framework_of_spec(const std::string& spec);

/// Parsers for the command-line specs; errors are ErrorCode::usage with the spec quoted.
Expected<InputSpec> parse_input_spec(const std::string& text);
Expected<DynamicAxis> parse_dynamic_axis(const std::string& text);
/// --sweep LABEL=SIZES, e.g. "batch=1,3,8".
Expected<std::pair<std::string, std::vector<int64_t>>> parse_sweep(const std::string& text);

/// The most steps --generate takes: the reference holds every step's logits (steps x batch x vocabulary).
inline constexpr int k_max_generate_steps = 4096;

struct ExportOptions {
  std::string model;  // SPEC: file.py:callable, package.module:callable, model.pt, torchvision:NAME
  std::vector<InputSpec> inputs;
  std::vector<DynamicAxis> dynamic;
  int64_t opset = 0;  // 0: the newest up to opset_ceiling that the exporter supports
  /// The newest opset the engine can prove (ONNX, ONNX Runtime, target tables) and why; the front
  /// end exports at min(this, the exporter's newest) when `opset` is 0.
  int64_t opset_ceiling = 0;
  std::string opset_ceiling_reason;
  std::map<std::string, int> opset_op_limits;  // OpsetLimit::op_limits: lowers the default opset
  int64_t opset_portable = 0;                  // OpsetLimit::portable: the default opset stays within it
  std::string opset_portable_reason;
  /// auto | torchscript | dynamo for PyTorch models, auto | tf2onnx | keras for TensorFlow ones
  /// (both: the pipeline runs one export per exporter; core/source_framework.h lists them).
  std::string exporter = "auto";
  std::map<std::string, std::vector<int64_t>> sweep;
  int samples = 3;
  /// Greedy steps of the generation proof the front end records (reference/generation/); 0: none.
  int generate = 0;
  /// With generate on an encoder-decoder: the decoder also as decoder_merged.onnx (an If on
  /// use_cache_branch), proved by the generation.
  bool merged_decoder = false;
  std::string data;                // file.py:callable yielding samples
  std::filesystem::path data_dir;  // folder of .npy / .pb samples
  std::filesystem::path out;
  std::string python;  // interpreter; empty: the framework's (front_end_interpreter)
  /// The export front end is stopped after this long (a forward pass that never returns).
  double timeout_seconds = 1800;
  uint64_t seed = 0;
  /// A finished export to adopt instead of running the front end: a folder holding export.json,
  /// the model and reference/ (written by `onnxproof export` or by the Python API's prove()).
  /// Its files are copied into `out`, never moved; the other model options are then unused.
  std::filesystem::path from_export;
  /// An ONNX file the user made (--onnx), proved as it is against `model` instead of exporting one
  /// (python/onnxproof/core/given_file.py); `bind`: its inputs -> the model's inputs (--bind).
  std::filesystem::path onnx;
  std::map<std::string, std::string> bind;
};

struct ExportResult {
  std::string spec;             // the model as the export names it (its --model spec, or prove()'s description)
  std::filesystem::path model;  // OUT/model.onnx; empty when the export failed
  std::string sha256;
  std::string exporter;
  /// The opset model.onnx declares and why it was chosen (export.json's opset); 0 when unrecorded.
  int64_t opset = 0;
  std::string opset_chosen_by;
  /// The source framework that exported it (export.json's framework: "torch", "tensorflow");
  /// "torch" for an export.json older than the field. The report and its findings name it, and
  /// localization's capture runs in its interpreter.
  std::string framework = "torch";
  int reference_sets = 0;
  /// The front end's peak resident set over its stages, MiB (export.json timings_s.peak_mib).
  std::optional<double> front_end_peak_mib{};
  /// The front end's versions as it reported them in export.json (python, torch, onnx, ...).
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<Finding> findings;
  /// The declared dynamic axes with their traced sizes, and the output axes that follow them,
  /// for the frozen-shape analysis.
  FrozenShapeOptions frozen;
  /// --onnx FILE: the user's file model.onnx copies, and its binding (export.json's given_file).
  std::optional<GivenFile> given_file;
};

/// Reads and checks OUT/export.json (and OUT/reference/cases.json): ErrorCode::internal naming
/// the field when it does not hold to onnxproof.export/1.
Expected<ExportResult> read_export_manifest(const std::filesystem::path& out);

/// The declared axes recorded by the export.json in `folder` (a run folder) for the frozen-shape
/// analysis; empty options when there is none or it is not onnxproof's (another schema). An
/// onnxproof export.json that breaks its schema is an error.
Expected<FrozenShapeOptions> frozen_shape_options_beside(const std::filesystem::path& folder);

/// Copies the export in `options.from_export` into `options.out` and reads it as run_export()
/// does; ErrorCode::usage when the folder holds no onnxproof export or is `out` itself,
/// ErrorCode::invalid_input when its model is not the one export.json names (sha256).
Expected<ExportResult> adopt_export(const ExportOptions& options);

/// Runs the front end, forwarding its progress lines to `progress`. Returns the findings (the
/// export may have failed because of the model: then `model` is empty and findings say why).
/// Fails with ErrorCode::usage for bad options (as the front end reports them), ErrorCode::not_found
/// when the interpreter cannot be started, ErrorCode::internal when the front end crashes.
Expected<ExportResult> run_export(const ExportOptions& options, std::ostream& progress);

/// The front end's half of divergence localization (python/onnxproof/torch/localize.py): the model
/// loaded again from RUN/export.json's spec, every module's inputs and outputs on the reference
/// case `data_set`, written to RUN/localize/ (modules.json and the tensors) with what it printed in
/// RUN/localize/capture.log. `model_file` (relative to RUN) is the ONNX model whose values are
/// mapped; `framework` the run's (ExportResult::framework; empty: torch) picks the interpreter
/// when `python` is empty. ErrorCode::invalid_input with the front end's reason when it cannot,
/// ErrorCode::not_found when the interpreter cannot start.
Expected<void> capture_module_outputs(const std::filesystem::path& run, const std::string& model_file,
                                      const std::string& data_set, const std::string& framework,
                                      const std::string& python, double timeout_seconds);

/// Everything that can be checked before Python starts, as ErrorCode::usage with the option named:
/// the opset against 7 and opset_ceiling, --dynamic axes (an input that exists, an axis it has,
/// one label per axis), --sweep labels, generated input sizes (4 GiB each at most) and types,
/// --data-dir. run_export() calls it first.
Expected<void> validate_export_options(const ExportOptions& options);

/// The interpreter the front end runs with for models of `framework` (core/source_framework.h;
/// empty: torch): `requested` (--python) when set; else for "tensorflow" $ONNXPROOF_TF_PYTHON, else
/// the pinned environment scripts/setup.sh makes in .venv-tf; for any other framework
/// $ONNXPROOF_PYTHON, else .venv/bin/python (Installation::tf_python and ::python).
std::string front_end_interpreter(const std::string& requested, std::string_view framework);

/// The framework the export.json in `folder` names (a run folder; "torch" for one older than the
/// field); empty when the folder holds no readable onnxproof export.json (a bare reference folder).
std::string source_framework_beside(const std::filesystem::path& folder);

/// Replaces this process by `python -m MODULE ARGS...` with the front end's interpreter and package,
/// as the export runs them; returns only when the interpreter cannot start (ErrorCode::not_found).
Error exec_front_end_module(const std::string& module, std::vector<std::string> args);

/// (tool, version) pairs asked from the interpreter of `framework`'s models (python with its path,
/// then the packages its front end names: torch, torchvision, onnx, ...), for --version: the
/// versions actually used, not the build's.
Expected<std::vector<std::pair<std::string, std::string>>> front_end_versions(std::string_view framework);

}  // namespace onnxproof
