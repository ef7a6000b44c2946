// The golden proof: with a golden set (an earlier run's, or the user's --golden folder) the new
// export is verified against it, else the proved outputs are frozen into one; one slice: this
// step, its typed result and its run-folder entry (golden/, core/run_layout.h). The set's
// format and its verification (golden/golden.h) are shared with `onnxproof golden`.
#include "golden_proof.h"

#include <fmt/format.h>

#include <memory>
#include <string>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/golden/golden.h"

namespace onnxproof {

nlohmann::json GoldenFigures::to_json() const {
  if (action == GoldenAction::verify) {
    nlohmann::json json = {{"action", "verify"}, {"model_changed", model_changed}, {"folder", folder}};
    if (generation_runs > 0) json["generation_runs"] = generation_runs;
    return json;
  }
  return {{"action", "freeze"}, {"data_sets", data_sets}, {"generation", generation}, {"folder", folder}};
}

}  // namespace onnxproof

namespace onnxproof::pipeline_run {

namespace {

// Golden outputs only when asked for (prove()'s default): an omitted step is not a skipped one.
bool golden_wanted(const Run& run) { return run.options.golden; }

// With a golden set (from an earlier run, or in the user's --golden folder): verify the new
// export against it (drift fails the run). Without one: freeze the proved outputs.
StepReport golden_step(Run& run) {
  StepReport step{.name = "golden"};
  const bool users_folder = !run.options.golden_folder.empty();
  const fs::path golden = users_folder ? run.options.golden_folder : run.out / "golden";
  const fs::path previous = users_folder ? run.options.golden_folder : run.published / "golden";
  // The golden set holds the export's own outputs: the float16 variant's budget does not apply.
  GoldenOptions options{run.options.parity, run.report.versions};
  // A generation proof that passed is frozen with the data sets (golden/generation/).
  if (const StepReport* generate = find_step(run.report, "generate"); generate && generate->status == StepStatus::pass)
    options.generation = run.out / "reference" / "generation";
  const bool float16_proof = options.parity.precision == DType::float16;
  options.parity.precision = DType::undefined;
  if (fs::exists(previous / "manifest.json")) {
    GoldenOptions verify_options = options;
    verify_options.parity.compare_optimization_off = false;
    verify_options.parity.providers = {"cpu"};
    auto result = verify_golden(run.model, previous, verify_options);
    if (!result) return step_error(step, result.error());
    // The golden set outlives the runs that verify against it: it moves into the new run folder
    // (a folder of the user's stays where it is).
    if (!users_folder) {
      if (auto carried = copy_by_hard_links(previous, golden); !carried) return step_error(step, carried.error());
    }
    add_findings(run, result->findings);
    auto figures = std::make_shared<GoldenFigures>(GoldenAction::verify, users_folder ? golden.string() : "golden/");
    figures->model_changed = result->model_changed;
    figures->generation_runs = result->generation.size();
    step.result = figures;
    run.report.golden_folder = figures->folder;
    step.status = result->passed() ? StepStatus::pass : StepStatus::fail;
    run.golden_evidence = users_folder ? "verified the new export against the golden set in " + golden.string()
                                       : "verified the new export against the golden set of an earlier run";
    return step;
  }
  if (!run.report.parity || !run.report.parity->passed()) {
    step.reason = "the parity proof did not pass: nothing to freeze";
    run.golden_evidence = step.reason;
    return step;
  }
  // After a float16 proof the freeze proves the export itself (its outputs are the golden ones).
  auto result =
      freeze_golden(run.model, *run.reference, golden, options, float16_proof ? nullptr : &*run.report.parity);
  run.report.parity->cpu_outputs.clear();  // written into golden/ (or not): no longer needed in memory
  if (!result) return step_error(step, result.error());
  auto figures = std::make_shared<GoldenFigures>(GoldenAction::freeze, users_folder ? golden.string() : "golden/");
  figures->data_sets = result->data_sets;
  figures->generation = !options.generation.empty();
  step.result = figures;
  run.report.golden_folder = figures->folder;
  step.status = result->frozen ? StepStatus::pass : StepStatus::fail;
  run.golden_evidence = fmt::format("frozen now: {} data sets{} in {}", result->data_sets,
                                    options.generation.empty() ? "" : " and the generation",
                                    users_folder ? golden.string() : std::string("golden/"));
  return step;
}

}  // namespace

StepDefinition golden_proof() {
  return {"golden", golden_step, "model, reference, report.parity", "golden/, golden_evidence", true, golden_wanted};
}

}  // namespace onnxproof::pipeline_run
