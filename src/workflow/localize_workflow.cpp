// `onnxproof localize RUN`: the pipeline's localization (pipeline/localize_case.h) on a finished
// run folder, on its worst failing comparison or the case given.
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/ownership.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/pipeline/localize_case.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/published_report.h"
#include "onnxproof/workflow/workflows.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The case, provider and optimization level to localize on: as given, else the worst failing
// comparison of the run's report.
Expected<ParityRow> localize_target(const LocalizeCommand& command, const ParityResult& recorded) {
  ParityRow chosen;
  if (command.data_set.empty()) {
    const auto worst = worst_failing_row(recorded);
    if (!worst)
      return fail(ErrorCode::usage,
                  "the run's parity passed: nothing to localize (--case test_data_set_N compares "
                  "one case anyway)");
    chosen = *worst;
  } else {
    const auto level = parse_optimization(command.optimization);
    if (level != GraphOptimization::all && level != GraphOptimization::disabled)
      return fail(ErrorCode::usage, "--optimization must be all or disabled");
    chosen.data_set = command.data_set;
    chosen.provider = command.provider;
    chosen.optimization = *level;
  }
  return chosen;
}

// The capture as asked: none when the run holds one already (--captured), else the front end of
// the run's source `framework` (said on `progress` first).
CaptureModuleOutputs capture_for(const LocalizeCommand& command, const std::string& framework, std::ostream& progress) {
  if (command.captured)
    return [](const fs::path&, const std::string&, const std::string&) -> Expected<void> { return {}; };
  return [capture = python_capture(command.python, framework, 1800), title = source_title(framework), &progress](
             const fs::path& run, const std::string& model_file, const std::string& data_set) {
    progress << "capturing every module's outputs in " << title << " on " << data_set << '\n' << std::flush;
    return capture(run, model_file, data_set);
  };
}

// localization.md and report-localize.svg beside the localization.json localize_case wrote.
Expected<void> write_localization_views(const Localization& localization, const fs::path& folder) {
  ONNXPROOF_TRY(write_file_atomically(folder / "localization.md", localization_to_markdown(localization)));
  return write_file_atomically(folder / "report-localize.svg", localization_plot_svg(localization));
}

// RUN/localize is written and its pytorch/ replaced: only a real folder of the run, never
// through a link to somewhere else.
Expected<void> require_own_localize_folder(const fs::path& folder) {
  std::error_code ec;
  const auto status = fs::symlink_status(folder, ec);
  if (!fs::exists(status) || fs::is_directory(status)) return {};
  return fail(ErrorCode::usage, "refusing to write into " + folder.string() + ": it is " +
                                    (fs::is_symlink(status) ? "a symbolic link" : "not a folder") +
                                    "; onnxproof writes localize/ only as a folder of the run");
}

}  // namespace

Expected<Outcome<LocalizedRun>> localize_workflow(const LocalizeCommand& command, std::ostream& progress) {
  ONNXPROOF_TRY(require_own_localize_folder(command.run / "localize"));
  // What localize reads is the run folder's own: never a link to somewhere else.
  for (const char* own : {"report.json", "reference"})
    ONNXPROOF_TRY(require_not_a_link(command.run / own, "a run folder"));
  ONNXPROOF_TRY_ASSIGN(const auto report, read_published_report(command.run, ErrorCode::usage));
  ONNXPROOF_TRY_ASSIGN(const auto parity, parity_options_from(command.proof));
  const ParityResult recorded = parity_rows_of(report);
  ONNXPROOF_TRY_ASSIGN(const auto target, localize_target(command, recorded));
  ONNXPROOF_TRY_ASSIGN(const auto reference, read_reference(command.run / "reference"));
  const ReferenceCase* c = find_case(reference, target.data_set);
  if (!c)
    return fail(ErrorCode::usage,
                "no reference case " + target.data_set + " in " + (command.run / "reference").string());
  // The model the run proved (model.sim.onnx when simplification changed it), in the run folder.
  const fs::path model =
      command.run / fs::path(report.onnx_model.empty() ? "model.onnx" : report.onnx_model).filename();
  const std::string framework = source_framework_beside(command.run);
  // Localized in a staged copy of the run (its files linked) that replaces it as a whole: the
  // published run is never written into.
  ONNXPROOF_TRY(require_replaceable_run_folder(
      command.run, "localize replaces the run as a whole: move what onnxproof did not write out of it first"));
  ONNXPROOF_TRY_ASSIGN(auto staging, StagingFolder::create(command.run));
  const FolderIdentity copied = identity_of(command.run);
  // A capture already there (--captured) is read from the copy; a new one replaces localize/ whole.
  ONNXPROOF_TRY(
      link_folder_contents(command.run, staging.path(),
                           command.captured ? std::vector<std::string>{} : std::vector<std::string>{"localize"}));
  const fs::path staged_model = staging.path() / model.filename();
  LocalizedCase localized = localize_case({.run = staging.path(),
                                           .model = staged_model,
                                           .target = target,
                                           .parity = &recorded,
                                           .tolerance = parity.tolerance,
                                           .capture = capture_for(command, framework, progress),
                                           .framework = framework},
                                          *c);
  if (!localized.localization) return std::unexpected(localized.localization.error());
  ONNXPROOF_TRY(write_localization_views(*localized.localization, staging.path() / "localize"));
  ONNXPROOF_TRY(staging.publish_over(copied));
  const fs::path folder = command.run / "localize";
  if (!localized.optimizer) return std::unexpected(localized.optimizer.error());
  const auto& optimizer = *localized.optimizer;
  Outcome<LocalizedRun> outcome{.findings = localized.localization->findings};
  if (optimizer) outcome.findings.insert(outcome.findings.begin(), *optimizer);
  const bool named_optimizer = optimizer && !optimizer->where.empty();
  outcome.verdict = verdict_from(true, localized.localization->located || named_optimizer);
  outcome.artifacts = {folder / "localization.json", folder / "localization.md", folder / "report-localize.svg",
                       folder / "node_errors.json", folder / "model_explorer_node_data.json"};
  outcome.result = {std::move(*localized.localization), folder / "localization.md"};
  return outcome;
}

}  // namespace onnxproof
