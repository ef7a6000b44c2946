#pragma once
// Repair (docs/repair.md): from a failed run, the changes its findings point at are tried,
// cheapest first, each a full proof of its own in RUN/repair/NN-NAME/: an ONNX Runtime optimizer
// the deployment switches off, a block kept in float32 for --precision fp16, a known rewrite of the export where the
// findings point, the other exporter, lower opsets; then the smallest combinations. The first that passes is the
// repair. Nothing changes what the model computes in its framework: every candidate is proved against the same
// framework outputs by the same rule, so a candidate that moves the numbers beyond it fails.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/check/frozen_shapes.h"
#include "onnxproof/core/error.h"
#include "onnxproof/pipeline/pipeline.h"

namespace onnxproof {

/// One change to try: what it is, what points at it, and the options it sets.
struct RepairCandidate {
  /// optimizer | float32 | precision | rewrite | exporter | opset; joined by "+" in a combination. (onnxproof's
  /// own simplify needs no candidate: the pipeline proves the export itself when the simplified
  /// model fails where the export passes, settle_simplified_proof.)
  std::string kind;
  std::string name;       // short and folder-safe: "exporter-torchscript", "opset-20", "optimizer-ConvAddFusion"
  std::string change;     // one sentence: "export with torchscript instead of dynamo"
  std::string reason;     // the finding that points at it
  bool reexport = false;  // needs a new export (exporter, opset)
  std::optional<std::string> exporter{};
  std::optional<int64_t> opset{};
  std::vector<std::string> disabled_optimizers{};
  bool keep_float32 = false;            // the float32 block is searched for when the candidate runs
  std::vector<std::string> reshapes{};  // rewrite: the Reshape nodes whose frozen size becomes 0 (copy)
  bool openvino_float32 = false;        // precision: OpenVINO compiled with INFERENCE_PRECISION_HINT=f32
};

/// What the failed run says, as the planner reads it (read_repair_facts).
struct RepairFacts {
  std::string verdict;      // the run's: only "fail" is repaired
  std::string framework;    // torch | tensorflow
  std::string exporter;     // the exporter that made the proved model
  int64_t opset = 0;        // its ai.onnx opset (0: none, the export failed)
  bool has_model = false;   // the run holds a model to change without a new export
  bool simplified = false;  // the failing proof ran on model.sim.onnx
  bool float16 = false;     // --precision fp16
  bool can_reexport = false;
  std::set<std::string> failing_cases;      // cases of parity rows that did not pass: what a change must mend
  std::set<std::string> failing_providers;  // the providers of those rows ("openvino:default")
  struct FindingFact {
    std::string code{}, severity{}, where{}, message{}, step{};
  };
  std::vector<FindingFact> findings;
};

/// Reads RUN/report.json and RUN/export.json; ErrorCode::usage when RUN is not a pipeline's run folder.
Expected<RepairFacts> read_repair_facts(const std::filesystem::path& run, bool can_reexport);

/// The file:line of the model's code a FROZEN_DIMENSION finding names (the tracer's), or "".
std::string frozen_source_line(const RepairFacts& facts);

/// The candidates for a failed run, in the order they are tried: the single changes, cheapest
/// first (no new export before a new export), then combinations of two that a new export allows.
std::vector<RepairCandidate> plan_repair(const RepairFacts& facts);

/// One Reshape whose constant shape held a traced size, and what it holds after the rewrite.
struct ReshapeRewrite {
  std::string node;
  std::vector<int64_t> before, after;
};

/// Writes to `out` a copy of `model` in which each Reshape whose constant shape holds a traced size
/// of the `dynamic` axes has 0 in each such entry whose position is a dynamic axis of the
/// Reshape's input (by shape inference with those axes symbolic; for a Reshape named in `nodes`,
/// FROZEN_DIMENSION's, where inference says nothing, the first such entry): ONNX's "copy the input's size",
/// so the axis follows the input again. Each node gets a shape constant of its own (another node
/// may share the old one). Whether the rewrite is right is for the proof to say.
/// ErrorCode::invalid_input when no node could be rewritten.
Expected<std::vector<ReshapeRewrite>> rewrite_frozen_reshapes(const std::filesystem::path& model,
                                                              const std::vector<std::string>& nodes,
                                                              const std::vector<DeclaredAxis>& dynamic,
                                                              const std::filesystem::path& out);

/// What the float32 block search works on: the model the failing proof converted (model.onnx or
/// model.sim.onnx), the cases that failed, and the proof's float16 options.
struct Float32BlockSearch {
  std::filesystem::path model;
  Reference reference;   // the failing cases only
  ParityOptions parity;  // precision float16, the run's tolerances
  std::string python;    // the converter's interpreter (front_end_interpreter's rule)
  double timeout_seconds = 1800;
};

/// The nodes kept in float32 and how many conversions it took; empty when no block short of
/// every node passes (float16 is not what breaks the model, or only the float32 model holds).
struct Float32Block {
  std::vector<std::string> nodes;
  int conversions = 0;
};

/// The shortest run of nodes, in the graph's order, whose float32 makes the conversion pass on
/// the failing cases: the shortest passing prefix, then the latest start that still passes
/// (about 2 log2(nodes) conversions), in the folder `scratch`.
Expected<Float32Block> find_float32_block(const Float32BlockSearch& search, const std::filesystem::path& scratch);

/// Exports the model again with another exporter or opset into `folder` (an export folder:
/// export.json, the model, reference/), for a run whose export the engine cannot make itself (an
/// attached front end holding the model object). Unset: the pipeline exports from the spec.
using ReExport = std::function<Expected<void>(const RepairCandidate& candidate, const std::filesystem::path& folder)>;

struct RepairOptions {
  std::filesystem::path run;  // the failed run folder (a staged copy of it); RUN/repair/ is written
  /// The folder `run` is published as, which repair.json, repair.md and the candidates' reports
  /// name; empty: `run` itself.
  std::filesystem::path shown_as{};
  /// The options the failed run was proved with; each candidate changes a copy.
  PipelineOptions base;
  double budget_seconds = 900;  // no candidate starts once they are spent
  ReExport reexport{};
  /// Try every candidate, not only up to the first that passes: the table shows every change that
  /// fixes the run (the first stays the repair).
  bool every_candidate = false;
};

/// One candidate as it went.
struct RepairAttempt {
  RepairCandidate candidate;
  std::string status;  // pass | fail | error | not_tried
  std::string why;     // the first error finding, or why it did not run
  double seconds = 0;
  std::filesystem::path folder;                // RUN/repair/NN-NAME, relative to RUN
  std::vector<std::string> kept_in_float32{};  // float32: the nodes the search kept
  std::vector<ReshapeRewrite> rewrites{};      // rewrite: what changed
};

struct RepairResult {
  std::vector<RepairAttempt> attempts;
  std::optional<std::size_t> repaired{};           // the attempt that passed
  nlohmann::json diff = nlohmann::json::object();  // what the repair changed (exporter, opset, session options, nodes)
  double seconds = 0;
  bool budget_spent = false;
  /// The line of the model's code a size was frozen at (FROZEN_DIMENSION's file:line), when the
  /// run names one: a rewrite patches the graph, not that line.
  std::string frozen_at{};
};

/// Tries the candidates in order within the budget, each run_pipeline()'d into RUN/repair/NN-NAME
/// (no golden set, no localization), stopping at the first pass; writes RUN/repair/repair.json,
/// repair.md and, for an optimizer, session-options.md. ErrorCode::usage when RUN did not fail.
Expected<RepairResult> repair_run(const RepairOptions& options, std::ostream& progress);

/// The "what to do" of a repaired run's report: where the proved fix lies, or that none was found.
std::string repair_what_to_do(const RepairResult& result, const std::string& before);

/// What the run's report says after the repair (Report::repair): `before`, the advice of the run's
/// own findings, and repair_what_to_do's.
RepairPointer repair_pointer(const RepairResult& result, const std::string& before);

/// The report.json, report.md and report.html of a staged copy of a finished run (`onnxproof
/// repair RUN`, which has the run's report only as files) point at the repair: their "what to do"
/// replaced. Never called on a published run: the copy is published as a whole.
Expected<void> point_report_at_repair(const std::filesystem::path& staged_run, const RepairResult& result);

}  // namespace onnxproof
