#pragma once
// Divergence localization: where ONNX Runtime first departs from the source framework (PyTorch,
// TensorFlow), module by module. The front end (python/onnxproof/torch/localize.py for PyTorch)
// maps every module to the ONNX values that cross its boundary and saves its tensors there for one
// reference case (RUN/localize/modules.json); this runs a copy of the model with those values as extra outputs,
// compares in the order the modules finished, and names the first module whose inputs agree and
// whose outputs do not (DIVERGENCE_LOCATED).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/localize/graph_view.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

inline constexpr std::string_view k_localize_schema = "onnxproof.localize/1";

/// One module's call(s), ONNX Runtime's values against the source framework's (PyTorch's).
struct ModuleComparison {
  std::string module;              // "blocks.7.act"; "" is the whole model
  std::string class_name;          // "models.bert.FFN"
  std::string source;              // file:line of its forward()
  std::vector<std::string> nodes;  // the ONNX nodes the exporter attributed to it
  /// The ONNX values at its boundary (what modules.json paired with its inputs and outputs).
  std::vector<std::string> input_values{};
  std::vector<std::string> output_values{};
  int calls = 1;
  bool matched = false;     // its values were paired and compared
  std::string reason;       // why not, when not matched
  double input_error = 0;   // largest max_rel over its inputs
  double output_error = 0;  // largest max_rel over its outputs
  double output_abs = 0;    // largest max_abs over its outputs
  int64_t output_mismatches = 0;
  int64_t output_elements = 0;
  int64_t nonfinite_outputs = 0;  // NaN/Inf positions where PyTorch's value differs
  bool inputs_agree = true;       // within tolerance, NaN where PyTorch has NaN only
  bool outputs_agree = true;
};

/// The comparison of one reference case on one provider and optimization level.
struct Localization {
  std::string data_set;
  std::string provider;
  GraphOptimization optimization = GraphOptimization::all;
  std::vector<ModuleComparison> modules{};  // in the order the modules finished
  std::optional<std::size_t> located{};     // index into modules
  /// The copy with every module's values as outputs still misses PyTorch's outputs, as parity
  /// did (it may not: ONNX Runtime does not fuse across a graph output).
  bool reproduced = true;
  double largest_error = 0;  // max abs over the model's outputs in that run
  /// Every module was judged against its float64 twin (the calibrated rule, as parity judges);
  /// false where the capture had no float64 run and rtol x magnitude judged instead.
  bool calibrated = false;
  std::vector<Finding> findings{};
  double seconds = 0;  // capture and comparison together (set by the caller)
  /// The run's source framework (LocalizeOptions::framework), as the findings and views name it.
  std::string framework{};
  /// Every node of the graph with its innermost compared module's figures (node_errors.json), and
  /// the first divergent nodes' neighbourhood the report draws (none when no module is located).
  std::vector<NodeError> node_errors{};
  std::optional<GraphView> view{};
  std::string graph{};       // the ONNX graph's name (Model Explorer's graph id)
  std::string model_file{};  // the file compared (model.onnx, or the run's model.sim.onnx), in the run folder
  /// Why the view's nodes have no float64 figures (localize/float64_graph.h); empty when they do.
  std::string float64_unavailable{};
  std::vector<std::string> float64_float32_ops{};  // run in float32 there: no float64 kernel
};

/// Each node of `structure` with the innermost of `modules` that lists it (the one of fewest
/// nodes), its status and figures; `located` marks the first divergent module.
std::vector<NodeError> node_errors_of(const std::vector<ModuleComparison>& modules, std::optional<std::size_t> located,
                                      const GraphStructure& structure);

struct LocalizeOptions {
  SessionOptions session{};  // the provider and optimization level of the failing comparison
  ToleranceOptions tolerance{};
  std::string framework{};  // the captured values' source framework (core/source_framework.h; empty: torch)
};

/// Compares module by module on the reference case `c`. Needs RUN/localize/modules.json (the front
/// end's capture of that case); `model` is the ONNX model the capture mapped. ErrorCode::invalid_input
/// when the capture is missing, malformed or of another case, ErrorCode::runtime when ONNX Runtime
/// cannot run the copy.
Expected<Localization> localize_divergence(const std::filesystem::path& run, const std::filesystem::path& model,
                                           const ReferenceCase& c, const LocalizeOptions& options);

/// Which ONNX Runtime optimizer changes a case's outputs, when they match PyTorch's with graph
/// optimizations disabled and differ with them on: found by disabling optimizers by name (session
/// config optimization.disable_specified_optimizers), half of the suspects at a time.
struct OptimizerSearch {
  std::vector<std::string> optimizers;  // disabling these (one, when a single one is to blame) restores the match
  int sessions = 0;                     // sessions opened to find them
  /// Disabling every named optimizer does not restore the match: the difference comes from what
  /// the level changes otherwise (layouts, kernel choice).
  bool unnamed = false;
};

/// Whether the outputs match with the optimizers named disabled (and the rest on).
using DisabledOptimizersMatch = std::function<Expected<bool>(const std::vector<std::string>& disabled)>;

/// Halves ONNX Runtime's named optimizers, disabling one half at a time, until disabling one (or
/// the fewest that cannot be split) restores the match; `unnamed` when disabling them all does
/// not. `sessions` counts the calls of `matches`. The optimizers `kept_on` are never disabled
/// (to look for another culprit besides one found).
Expected<OptimizerSearch> find_optimizer_by(const DisabledOptimizersMatch& matches,
                                            const std::vector<std::string>& kept_on = {});

/// `names` in the order ONNX Runtime runs its optimizers (the order of the search's list).
std::vector<std::string> in_onnxruntime_order(std::vector<std::string> names);

/// Runs `c` with `failing` (optimizations on) and named optimizers disabled; compares with
/// PyTorch's outputs in `c`.
Expected<OptimizerSearch> find_optimizer_changing_outputs(const std::filesystem::path& model, const ReferenceCase& c,
                                                          const SessionOptions& failing,
                                                          const ToleranceOptions& tolerance);

/// True when `failing` (a row with optimizations on) passed on the same case, provider and output
/// with optimizations disabled: then an optimizer is to blame.
bool passes_without_optimizations(const ParityResult& parity, const ParityRow& failing);

/// RUNTIME_OPTIMIZATION_CHANGED_OUTPUTS for a search's result on `data_set`.
Finding optimizer_finding(const OptimizerSearch& search, const std::string& data_set, const std::string& provider,
                          const std::string& framework);

/// The failing comparison to localize on: the parity row with the largest error among the
/// failed ones (NaN differences first, then argmax flips, then the largest max_abs); none when
/// parity passed.
std::optional<ParityRow> worst_failing_row(const ParityResult& parity);

/// The localization as JSON (report.json's "localization", RUN/localize/localization.json).
nlohmann::json localization_to_json(const Localization& localization);

}  // namespace onnxproof
