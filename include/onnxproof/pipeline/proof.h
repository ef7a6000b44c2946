#pragma once
// What a proof is to the pipeline: one step over the Run every step reads and extends, with a
// typed result (report/step_result.h: its report.json figures, report section and files) and the
// run-folder entries it writes (core/run_layout.h). The core steps and the proofs of src/proofs/
// are listed in steps.cpp; a proof from elsewhere (a test's, a new runtime's) is added with
// register_proof() and nothing else: docs/ARCHITECTURE.md has the recipe.

#include <filesystem>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxproof/check/check_model.h"
#include "onnxproof/core/error.h"
#include "onnxproof/core/run_layout.h"
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

/// A step that could not do its job: status error, the reason in one line.
StepReport step_error(StepReport step, const Error& error);

void add_findings(Run& run, const std::vector<Finding>& findings);

/// One step of the pipeline: its name, its function, what it reads of the Run and publishes into
/// it (said for readers and ARCHITECTURE.md), whether it needs a model, when it runs at all, and
/// the entries it writes at the top of the run folder.
struct StepDefinition {
  std::string_view name;
  StepReport (*run)(Run&);
  std::string_view reads;
  std::string_view publishes;
  bool needs_model;
  bool (*wanted)(const Run&) = nullptr;  // null: always in the pipeline; else only when it says so
  std::span<const RunEntry> writes{};    // its files and folders in the run (core/run_layout.h)
};

/// Adds a proof to every later pipeline, run just before the step named `before` (at the end
/// when no step has that name), and its entries to the run-folder layout. ErrorCode::usage when
/// a step already has its name. The strings and entries it points at must outlive the pipelines
/// (string literals, static arrays).
Expected<void> register_proof(const StepDefinition& proof, std::string_view before = "golden");

/// Removes a proof register_proof() added (and its run-folder entries); false when none has that name.
bool unregister_proof(std::string_view name);

}  // namespace onnxproof::pipeline_run
