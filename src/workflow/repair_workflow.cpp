// `onnxproof repair RUN` and `pipeline --repair` (docs/repair.md): the command a run was made
// with, recorded beside it, changed as each candidate says and proved again (repair/repair.h).
#include "repair_workflow.h"

#include "command_record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/folder_lock.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/ownership.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/repair/repair.h"
#include "onnxproof/report/ship_summary.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The repair's options from the run's command: its model and proof options. Each candidate gets
// its own folder in RUN/repair/; until then `out` names none, never the run (which a
// --from-export of it may not hold).
Expected<RepairOptions> repair_options(const PipelineCommand& command, const fs::path& run, double budget) {
  const fs::path placeholder = fs::absolute(run).parent_path() / (fs::absolute(run).filename().string() + ".repair");
  ONNXPROOF_TRY_ASSIGN(auto base, pipeline_options_from(command, placeholder));
  return RepairOptions{.run = run, .base = std::move(base), .budget_seconds = budget};
}

// A candidate's export by an attached front end, asked for as the first export was.
ReExport by_front_end(const ExportAgain& export_again) {
  return [export_again](const RepairCandidate& candidate, const fs::path& folder) {
    return export_again(candidate.exporter.value_or(""), candidate.opset.value_or(0), folder);
  };
}

}  // namespace

bool before_pipeline_publishes(const PipelineCommand& command, const PipelineOptions& options, Report& report,
                               const StagedRun& run, const ExportAgain& export_again, std::ostream& progress) {
  // What `onnxproof repair RUN` proves again; a run of --exporter both holds one per exporter.
  if (auto recorded = write_command_record(command, run.staging); !recorded)
    progress << "onnxproof pipeline: " << recorded.error().describe() << '\n' << std::flush;
  if (!command.repair || report.verdict != Verdict::fail) return false;
  RepairOptions repair{
      .run = run.staging, .shown_as = run.published, .base = options, .budget_seconds = command.repair_budget};
  repair.base.export_options.out = run.published;
  if (export_again) repair.reexport = by_front_end(export_again);
  auto result = repair_run(repair, progress);
  if (!result) {
    progress << "onnxproof repair: could not run: " << result.error().describe() << '\n' << std::flush;
    return false;
  }
  report.repair = repair_pointer(*result, summarize_for_shipping(report).what_to_do);
  return true;
}

Expected<Outcome<RepairedRun>> repair_workflow(const RepairCommand& command, std::ostream& progress) {
  if (!(command.budget > 0)) return fail(ErrorCode::usage, "--repair-budget must be a positive number of seconds");
  if (!fs::is_regular_file(command.run / "report.json"))
    return fail(ErrorCode::usage, command.run.string() + " is not a run folder of onnxproof pipeline (no report.json)");
  for (const char* own : {"report.json", "reference", "export.json", "command.json"})
    ONNXPROOF_TRY(require_not_a_link(command.run / own, "a run folder"));
  if (fs::is_symlink(command.run / "repair"))
    return fail(ErrorCode::usage, "refusing to write into " + (command.run / "repair").string() +
                                      ": it is a symbolic link; onnxproof writes repair/ only as a folder of the run");
  PipelineCommand recorded;
  if (fs::exists(command.run / "command.json")) {
    ONNXPROOF_TRY_ASSIGN(recorded, read_command_record(command.run));
  } else {
    // An older onnxproof's run: its own export, proved again with the default proof options.
    progress << "onnxproof repair: " << command.run.string()
             << " has no command.json (an older onnxproof's run): its export is proved again with the default "
                "proof options\n"
             << std::flush;
    recorded.model.from_export = fs::absolute(command.run);
  }
  auto options = repair_options(recorded, command.run, command.budget);
  // The options come from the run's record, not from this command line: the refusal says so.
  if (!options && fs::exists(command.run / "command.json"))
    return fail(options.error().code(), (command.run / "command.json").string() +
                                            " records options onnxproof refuses: " + options.error().message());
  if (!options) return std::unexpected(options.error());
  options->every_candidate = command.every_candidate;
  // The repair works on a staged copy of the run (its files linked, not copied) that replaces the
  // run as a whole at the end: until then, and if it fails, the published run stays as it was.
  ONNXPROOF_TRY(require_replaceable_run_folder(
      command.run, "repair replaces the run as a whole: move what onnxproof did not write out of it first"));
  // A second repair of the same run is refused while this one works (both would stage beside it).
  ONNXPROOF_TRY_ASSIGN(const FolderLock lock, FolderLock::take(command.run, "onnxproof repair"));
  ONNXPROOF_TRY_ASSIGN(auto staging, StagingFolder::create(command.run));
  const FolderIdentity copied = identity_of(command.run);
  ONNXPROOF_TRY(link_folder_contents(command.run, staging.path(), {"repair"}));
  options->run = staging.path();
  options->shown_as = command.run;
  ONNXPROOF_TRY_ASSIGN(auto result, repair_run(*options, progress));
  ONNXPROOF_TRY(point_report_at_repair(staging.path(), result));
  ONNXPROOF_TRY(staging.publish_over(copied));
  Outcome<RepairedRun> outcome;
  outcome.verdict = verdict_from(true, result.repaired.has_value());
  outcome.artifacts = {command.run / "repair" / "repair.md", command.run / "repair" / "repair.json"};
  outcome.result = {std::move(result), command.run / "repair" / "repair.md"};
  return outcome;
}

}  // namespace onnxproof
