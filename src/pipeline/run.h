#pragma once
// The pipeline's insides, shared by its files: the steps and their table (steps.cpp; the Run
// every step reads and extends is public, pipeline/proof.h), the merges of findings and the headline (headline.cpp),
// and the driver that runs them in order (pipeline.cpp).

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
#include "onnxproof/pipeline/proof.h"
#include "onnxproof/report/report.h"

namespace onnxproof::pipeline_run {
namespace fs = std::filesystem;

/// Why a simplified model that failed parity is to blame rather than the export (simplified_proof.cpp):
/// it fails a row (provider, level, case, output) the export passes, or has more errors; nullopt
/// when it passed, or when its failure is the export's own.
std::optional<std::string> simplified_fails_where_export_passes(const ParityResult& simplified,
                                                                const ParityResult& exported);

/// After parity ran on the simplified model (`result`; awaiting its proof, Run::simplified_unproved,
/// or a float16 proof of it): when it failed, the export is proved too (`prove_export`: the same
/// proof of run.exported), and where the simplified model is to blame the export is kept
/// (model.sim.onnx removed, `result` replaced by the export's, the ops audit made again, a
/// SIMPLIFY_CHANGED_OUTPUTS warning); the simplify step's figures (SimplifyFigures) say how it was proved.
void settle_simplified_proof(Run& run, ParityResult& result,
                             const std::function<Expected<ParityResult>()>& prove_export);

/// The operator audit of run.model (steps.cpp).
StepReport ops_step(Run& run);

/// --quantize static's step (quantize_step.cpp) and when it runs.
StepReport quantize_step(Run& run);
bool quantize_wanted(const Run& run);

/// The steps in the order they run: the core steps and the proofs of src/proofs/ (steps.cpp),
/// with the proofs register_proof() added.
std::vector<StepDefinition> pipeline_steps();

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
