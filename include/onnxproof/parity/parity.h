#pragma once
// The parity proof: every reference case (the source framework's inputs and outputs: PyTorch's,
// TensorFlow's) through ONNX Runtime on every requested provider, with graph optimizations on and
// off, compared output by output.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/parity/argmax.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/parity/detections.h"
#include "onnxproof/parity/silent_failures.h"
#include "onnxproof/parity/tolerance.h"
#include "onnxproof/quantize/steps.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {

/// One reference data set: reference/test_data_set_N with its entry in cases.json.
struct ReferenceCase {
  std::string data_set;                  // "test_data_set_3"
  std::map<std::string, int64_t> sizes;  // dynamic axis label -> size in this case
  int sample = 0;
  std::string source;  // "generated", or the --data spec
  std::vector<NamedTensor> inputs;
  std::vector<NamedTensor> outputs;  // the source framework's
  /// The float64 reference of each output (exact_output_K.pb), aligned with `outputs`; nullopt
  /// where the front end could not run the model in float64 (or for integer outputs).
  std::vector<std::optional<Tensor>> exact_outputs;
  std::optional<Tensor> labels;  // task labels, when the data carried them (labels.pb)
};

struct Reference {
  std::vector<ReferenceCase> cases;
  std::map<std::string, int64_t> example_sizes;  // label -> the export example's size
  /// Outputs compared as sets of detections (cases.json "detections"); their outputs get no
  /// element-by-element rows.
  std::vector<DetectionSet> detection_sets;
  /// Outputs of a random forward (cases.json "random_outputs", or fed by a random operator in the
  /// graph: mark_random_outputs()), with why: checked for shape, dtype and domain, not value by value.
  std::map<std::string, std::string> random_outputs;
  /// The source framework whose outputs these are (core/source_framework.h), as the findings name
  /// it: set by whoever knows (the pipeline from export.json; read_reference leaves it empty, which
  /// the findings word as PyTorch).
  std::string framework;
};

/// reference/cases.json (schema onnxproof.cases/1, written by the front end and by golden
/// freeze): the example's sizes and each data set's sizes, sample and source.
inline constexpr std::string_view k_cases_schema = "onnxproof.cases/1";
struct CasesManifest {
  struct Entry {
    std::string data_set;
    std::map<std::string, int64_t> sizes;
    int sample = 0;
    std::string source;
  };
  std::map<std::string, int64_t> example_sizes;
  std::vector<Entry> cases;
  std::vector<DetectionSet> detection_sets;
  std::map<std::string, std::string> random_outputs;  // output -> why it is random
};

/// Reads and checks a cases.json; ErrorCode::invalid_input naming the file and the field on a
/// mismatch.
Expected<CasesManifest> read_cases_manifest(const std::filesystem::path& path);

/// Reads DIR/test_data_set_*/{input,output}_K.pb (and labels.pb, exact_output_K.pb), with DIR/cases.json when
/// present (written by `onnxproof export`; ONNX's own test folders have none). Fails when DIR has
/// no data set, a data set has no input or output, or a file is unreadable.
Expected<Reference> read_reference(const std::filesystem::path& dir);

/// The float64 reference of the case's output `name` (by position `index` where the reference
/// names none); null when the case has none.
const Tensor* exact_output(const ReferenceCase& c, const std::string& name, std::size_t index);

/// The case named `data_set` (test_data_set_3); null when the reference has none.
const ReferenceCase* find_case(const Reference& reference, std::string_view data_set);

struct ParityOptions {
  /// ONNX Runtime's "cpu", "cuda", "tensorrt"; OpenVINO's "openvino" (float32, with its default
  /// configuration's rows beside it as advisory), "openvino:f32" (float32 only) and
  /// "openvino:default" (the default configuration, gating). docs/providers.md.
  std::vector<std::string> providers = {"cpu"};
  ToleranceOptions tolerance;
  /// Also run, on the first provider, the cases that do not pass with all optimizations once more
  /// with ONNX Runtime's graph optimizations disabled, so a fusion that shifts numbers is told
  /// from the export (cases that pass are proved at the level a default session runs).
  bool compare_optimization_off = true;
  /// Keep the CPU session's outputs (ParityResult::cpu_outputs) for a golden freeze that follows;
  /// off otherwise, so a proof does not hold every case's outputs in memory for nothing.
  bool keep_cpu_outputs = false;
  int intra_op_threads = 0;
  /// ONNX Runtime optimizers every session runs without (its session config
  /// optimization.disable_specified_optimizers): a deployment that sets it is proved as it runs.
  std::vector<std::string> disabled_optimizers{};
  /// The dtype the model under proof computes in when it is not PyTorch's: float16 for the
  /// float16 variant (a converted model whose inputs and outputs stay float32). Widens the
  /// calibrated budget by precision_scale() and the fixed rule to float16's defaults.
  /// DType::undefined: the outputs' own dtype.
  DType precision = DType::undefined;
  /// TensorRT's engine cache folder (the run folder's trt-cache/ in the pipeline); empty: none.
  std::filesystem::path tensorrt_cache{};
  /// Where progress lines go ("onnxproof parity: cpu, optimizations all: 8/16 cases"); none if null.
  std::ostream* progress = nullptr;
  /// Kinds of finding not looked for (parity_analyzer_names()): for tests that need one kind alone.
  std::set<std::string> skipped_analyzers{};
};

/// The kinds of parity finding, each an analyzer over the compared rows, in the order they run
/// (src/parity/analyzers/registry.cpp): "mismatch", "argmax-flip", "argmax-tie", ...
std::vector<std::string_view> parity_analyzer_names();

/// What became of one comparison: pass or fail when the outputs were compared; rejected when ONNX
/// Runtime refused the case (its shapes); error when it could not be run or read.
enum class RowStatus { pass, fail, rejected, error };

/// "pass", "fail", "rejected", "error": report.json's names.
std::string_view row_status_name(RowStatus status);
/// The status a name stands for; nullopt for any other text.
std::optional<RowStatus> parse_row_status(std::string_view name);

/// One case x provider x optimization level x output.
struct ParityRow {
  std::string data_set;
  std::map<std::string, int64_t> sizes;
  std::string provider;
  GraphOptimization optimization = GraphOptimization::all;  // all or disabled
  std::string output;
  RowStatus status = RowStatus::error;        // a row nobody decided is never a pass
  ToleranceRule rule = ToleranceRule::fixed;  // which rule decided the row
  Tolerance tolerance;                        // the fixed or user rule's figures
  Comparison comparison;
  std::optional<ExactDeviation> exact;     // the calibrated rule's figures
  std::optional<StepCount> steps;          // the steps rule's figures: ONNX Runtime against PyTorch
  std::optional<StepCount> pytorch_steps;  // PyTorch float32 against its float64 twin, when it ran
  std::optional<StepAllowance> allowed_steps;
  /// The compared values' range, scale and budget, for floating outputs: how strong the evidence is.
  std::optional<EvidenceSample> evidence;
  std::optional<ArgmaxCheck> argmax;
  /// Zeros, saturation and NaN/Inf that ONNX Runtime's output shows and PyTorch's does not.
  SilentSigns silent;
  std::string expected_shape;
  std::string actual_shape;
  std::string expected_dtype;  // "float32"
  std::string actual_dtype;
  std::string worst_at;   // coordinates of the worst element, e.g. "[1, 5]"
  std::string precision;  // what OpenVINO computed in ("f32", "bf16"); empty for ONNX Runtime
  std::string note;       // why rejected / errored

  /// True when the outputs were compared (status pass or fail), so the figures mean something.
  bool compared() const { return status == RowStatus::pass || status == RowStatus::fail; }
};

struct ProviderStatus {
  std::string provider;
  bool ran = false;
  std::string reason;  // why it was skipped
  /// Rows reported beside the proof, not gating it: OpenVINO's default configuration when the
  /// user asked for `openvino` (its float32 rows gate); RUNTIME_DEFAULT_PRECISION sums them up.
  bool advisory = false;
  std::string precision;  // what OpenVINO computed in; empty for ONNX Runtime
};

/// Accuracy against the data's labels, per provider (the source framework under "source").
struct TaskAccuracy {
  std::string output;
  int64_t samples = 0;
  std::map<std::string, double> accuracy;  // "source", "cpu", ...
  int64_t flipped = 0;                     // ONNX Runtime (first provider) predictions that differ from PyTorch's
};

struct ParityResult {
  std::vector<ParityRow> rows;
  std::vector<DetectionRow> detections;  // one per detection set x case x provider x level
  std::vector<ProviderStatus> providers;
  std::vector<TaskAccuracy> accuracy;
  std::vector<Finding> findings;
  /// A quantized model's rounding audit, per provider and QuantizeLinear type pair (rounding_audit.h).
  std::vector<RoundingAudit> rounding;
  /// ONNX Runtime's outputs on the CPU with all graph optimizations (the session golden freezes
  /// from), per data set, in the session's output order: freeze_golden writes these instead of
  /// running the model a second time. Empty unless ParityOptions::keep_cpu_outputs, or when "cpu" was
  /// not among the providers.
  std::map<std::string, std::vector<Tensor>> cpu_outputs;
  std::vector<std::string> cpu_input_names;   // that session's inputs, in its order
  std::vector<std::string> cpu_output_names;  // and its outputs, aligned with each cpu_outputs entry
  /// Findings each analyzer added (parity_analyzer_names()), as simplify counts its rules.
  std::map<std::string, std::size_t> analyzer_findings;
  /// The reference's source framework (Reference::framework), for the summaries that name it.
  std::string framework;
  /// Every provider ran and no finding is an error.
  bool passed() const;
  /// The first provider that could not run; null when all ran.
  const ProviderStatus* provider_not_run() const;
  /// Whether `provider`'s rows are advisory (ProviderStatus::advisory).
  bool advisory(const std::string& provider) const;
};

/// Runs the proof. Fails only when the tool cannot do it at all (the model file is unreadable);
/// an unavailable provider is a ProviderStatus with ran = false, and problems of the model
/// (tolerance misses, refused shapes, flipped argmax, NaN differences) are findings.
Expected<ParityResult> run_parity(const std::filesystem::path& model, const Reference& reference,
                                  const ParityOptions& options);

/// One reference case through a session: inputs fed by name (by position where the reference
/// names none), outputs in the session's order. The one way parity, golden and the simplify proof
/// run a case.
Expected<std::vector<Tensor>> run_case(Session& session, const ReferenceCase& c);

/// Where ONNX Runtime placed each node when it ran the case `c` with `options` (its profile, written
/// to the system's temporary folder and removed): what PROVIDER_FALLBACK reads. Errors: the
/// session cannot be opened or run, or the profile cannot be read.
Expected<std::vector<NodePlacement>> measure_placements(const std::filesystem::path& model, const ReferenceCase& c,
                                                        const SessionOptions& options);

/// PROVIDER_FALLBACK for the nodes of `placements` not on `provider` (nodes_off_provider), naming
/// them and the provider each ran on; nullopt when every node ran on `provider`.
std::optional<Finding> fallback_finding(const std::string& provider, const std::vector<NodePlacement>& placements);

/// "batch=4, seq=7" for a case's sizes.
std::string describe_sizes(const std::map<std::string, int64_t>& sizes);

/// "[1, 5]" for a flat index into a shape.
std::string format_index(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace onnxproof
