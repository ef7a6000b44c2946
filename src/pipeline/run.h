#pragma once
// The pipeline's insides, shared by its files: the Run every step reads and extends (steps.cpp:
// the steps and their table), the merges of findings and the headline (headline.cpp), and the
// driver that runs them in order (pipeline.cpp).

#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/check/check_model.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/report/report.h"

namespace onnxproof::pipeline_run {
namespace fs = std::filesystem;

// The run as later steps see it: each step's typed result, read by the steps after it and by
// the headline; the report's steps[] and findings[] are rendered from them.
struct Run {
  const PipelineOptions& options;
  fs::path out{};        // the staging folder the steps write into
  fs::path published{};  // the run folder it becomes at the end (holding the last run's golden set)
  std::ostream& progress;
  Report& report;
  fs::path model{};                        // set by export, replaced by simplify
  fs::path exported{};                     // the export as written (localization maps its node scopes)
  bool simplified_unproved = false;        // model.sim.onnx awaits the parity step's proof (simplify_step)
  std::optional<Reference> reference{};    // the source framework's data, read once after the export
  std::optional<Error> reference_error{};  // why it could not be read
  FrozenShapeOptions frozen{};             // the export's declared axes, for check
  std::optional<CheckResult> check{};      // set by check
  std::optional<OpsAudit> ops{};           // set by ops
  std::string golden_evidence{};           // what the golden step did
  bool kept_golden = false;                // the golden set of an earlier run, kept without the golden step
  std::optional<Error> usage_error{};      // a bad option: the run stops, the CLI exits 2
};

// A step that could not do its job: status error, the reason in one line.
StepReport step_error(StepReport step, const Error& error);

void add_findings(Run& run, const std::vector<Finding>& findings);

/// One step of the pipeline: its name, its function, what it reads of the Run and publishes into
/// it (said for readers and ARCHITECTURE.md), whether it needs a model, and when it runs at all.
struct StepDefinition {
  std::string_view name;
  StepReport (*run)(Run&);
  std::string_view reads;
  std::string_view publishes;
  bool needs_model;
  bool (*wanted)(const Run&) = nullptr;  // null: always in the pipeline; else only when it says so
};

/// Why a simplified model that failed parity is to blame rather than the export (simplified_proof.cpp):
/// it fails a row (provider, level, case, output) the export passes, or has more errors; nullopt
/// when it passed, or when its failure is the export's own.
std::optional<std::string> simplified_fails_where_export_passes(const ParityResult& simplified,
                                                                const ParityResult& exported);

/// After parity ran on the simplified model (`result`; awaiting its proof, Run::simplified_unproved,
/// or a float16 proof of it): when it failed, the export is proved too (`prove_export`: the same
/// proof of run.exported), and where the simplified model is to blame the export is kept
/// (model.sim.onnx removed, `result` replaced by the export's, the ops audit made again, a
/// SIMPLIFY_CHANGED_OUTPUTS warning); the simplify step's details say how it was proved.
void settle_simplified_proof(Run& run, ParityResult& result,
                             const std::function<Expected<ParityResult>()>& prove_export);

/// The operator audit of run.model (steps.cpp).
StepReport ops_step(Run& run);

/// --quantize static's step (quantize_step.cpp) and when it runs.
StepReport quantize_step(Run& run);
bool quantize_wanted(const Run& run);

/// The steps in the order they run (steps.cpp).
std::span<const StepDefinition> pipeline_steps();

/// One finding per frozen axis, the sweep's confirmation folded in (headline.cpp).
void merge_frozen_dimension_evidence(std::vector<Finding>& findings);

/// FROZEN_DIMENSION warnings the sweep contradicts, demoted to info.
void demote_contradicted_frozen_warnings(Report& report);

/// Drops EVIDENCE_WEAK when the reference holds no finite value (REFERENCE_NOT_FINITE says it).
void drop_weak_evidence_without_a_finite_reference(std::vector<Finding>& findings);

/// The check step's summary of the exported model as the report's signature.
ModelSignature model_signature(const ModelSummary& summary, const std::string& exporter);

/// MISSION.md's headline questions, answered from the steps' typed results.
void answer_headline(const Run& run, Report& report);

}  // namespace onnxproof::pipeline_run
