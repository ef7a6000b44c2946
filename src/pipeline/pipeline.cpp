#include "onnxproof/pipeline/pipeline.h"
#include "onnxproof/core/atomic_file.h"

#include <fmt/format.h>

#include <chrono>

#include "onnxproof/core/json_file.h"
#include "onnxproof/core/peak_memory.h"
#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/report/published_report.h"
#include "onnxproof/report/ship_summary.h"
#include "onnxproof/report/step_figures.h"
#include "onnxproof/report/versions.h"
#include "run.h"

namespace onnxproof {
namespace fs = std::filesystem;
using namespace pipeline_run;

namespace {

// The golden set outlives a run that did not reach the golden step (a failed export, no model)
// or could not finish it: the baseline of an earlier run moves into the new run folder unchanged,
// or the next run would freeze whatever it exports as the new baseline.
void keep_earlier_golden(Run& run) {
  const fs::path golden = run.out / "golden";
  const fs::path previous = run.published / "golden";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(golden, ec)) || !fs::is_directory(fs::symlink_status(previous, ec))) return;
  if (auto kept = copy_by_hard_links(previous, golden); !kept) {
    run.golden_evidence = kept.error().describe();
    return;
  }
  const StepReport* step = find_step(run.report, "golden");
  const bool errored = step && step->status == StepStatus::error;
  run.golden_evidence = errored ? step->reason + "; the golden set of an earlier run is kept unchanged"
                        : !run.options.golden
                            ? "no golden set asked for; the golden set of an earlier run is kept unchanged"
                            : "kept the golden set of an earlier run; this run did not reach the golden step";
  run.kept_golden = true;
  for (auto& skipped : run.report.steps) {
    if (skipped.name == "golden" && skipped.status == StepStatus::skip)
      skipped.reason += "; the golden set of an earlier run is kept";
  }
}

// The source framework the spec names, until the export step reads the one export.json names
// (an adopted or attached export has no spec: empty until then).
std::string spec_framework(const ExportOptions& options) {
  return options.model.empty() ? std::string() : source_framework_of_spec(options.model);
}

// A folder's own name however it is spelled: "dir" for path/to/dir/, the working folder's for ".".
std::string folder_name(const fs::path& folder) {
  std::error_code ec;
  fs::path normal = fs::absolute(folder, ec).lexically_normal();
  if (!normal.has_filename()) normal = normal.parent_path();
  return normal.filename().string();
}

}  // namespace

std::filesystem::path default_run_folder(const std::string& spec) {
  std::string name;
  const auto colon = spec.rfind(':');
  const std::string target = colon == std::string::npos ? spec : spec.substr(0, colon);
  constexpr std::string_view saved_model = "saved_model:";
  if (is_model_family(spec)) {  // hf:BertModel:num_hidden_layers=1 -> BertModel
    const std::string rest = spec.substr(spec.find(':') + 1);
    name = rest.substr(0, rest.find(':'));
  } else if (spec.starts_with(saved_model)) {  // saved_model:path/to/dir/ -> dir
    name = folder_name(spec.substr(saved_model.size()));
  } else if (target.ends_with(".py") || target.ends_with(".pt") || target.ends_with(".pth"))
    name = fs::path(target).stem().string();
  else
    name = colon == std::string::npos ? fs::path(spec).stem().string() : spec.substr(colon + 1);
  return fs::path("onnxproof-out") / name;
}

namespace {

// The report names the run folder the user asked for, not the staging folder it was built in.
void name_published_paths(Report& report, const fs::path& staging, const fs::path& published) {
  const auto rename = [&](std::string& text) {
    const std::string from = staging.string();
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + published.string().size()))
      text.replace(at, from.size(), published.string());
  };
  std::string model = report.onnx_model.string();
  rename(model);
  report.onnx_model = model;
  for (auto& finding : report.findings) {
    rename(finding.message);
    rename(finding.where);
  }
  for (auto& step : report.steps) rename(step.reason);
}

void run_steps(Run& run) {
  for (const auto& definition : pipeline_steps()) {
    if (definition.wanted != nullptr && !definition.wanted(run)) continue;
    if (definition.needs_model && run.model.empty()) {
      run.report.steps.push_back(
          {.name = std::string(definition.name), .reason = "no model: the export did not produce one"});
      continue;
    }
    run.progress << "onnxproof pipeline: " << definition.name << '\n' << std::flush;
    const auto start = std::chrono::steady_clock::now();
    const PeakMemory memory;
    StepReport step = definition.run(run);
    step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    step.peak_mib = memory.peak_mib();
    run.report.steps.push_back(std::move(step));
    if (run.usage_error) return;
  }
}

// What kept the localization from running, one reason after the other.
void note_localization_error(Report& report, const std::string& reason) {
  report.localization_error += (report.localization_error.empty() ? "" : "; ") + reason;
}

// After a parity failure (a mismatch, a flipped argmax, a NaN): where the outputs first diverge,
// on the worst failing comparison. Not a step: it explains a failure and never changes the verdict;
// when it cannot run, the report says why.
void localize_after_parity(Run& run) {
  const auto& findings = run.report.findings;
  if (!run.options.localize || !run.report.parity || run.model.empty() ||
      !(has_finding(findings, FindingCode::parity_mismatch) || has_finding(findings, FindingCode::argmax_flip) ||
        has_finding(findings, FindingCode::nan_or_inf)))
    return;
  const auto row = worst_failing_row(*run.report.parity);
  const ReferenceCase* c = row && run.reference ? find_case(*run.reference, row->data_set) : nullptr;
  if (!c) return;
  const ExportOptions& exported = run.options.export_options;
  auto capture = run.options.capture ? run.options.capture
                                     : python_capture(exported.python, run.report.framework, exported.timeout_seconds);
  // On the export as written: the simplify proof showed it computes what model.sim.onnx does, and
  // its nodes keep the exporter's module scopes, which a fold may move across modules.
  LocalizeCaseOptions options{.run = run.out,
                              .model = run.exported.empty() ? run.model : run.exported,
                              .target = *row,
                              .parity = &*run.report.parity,
                              .tolerance = run.options.parity.tolerance,
                              .capture = std::move(capture),
                              .progress = &run.progress,
                              .framework = run.report.framework};
  auto localized = localize_case(options, *c);
  if (!localized.optimizer)
    note_localization_error(run.report, "naming the optimizer: " + localized.optimizer.error().describe());
  else if (*localized.optimizer)
    add_findings(run, {**localized.optimizer});
  if (!localized.localization) {
    note_localization_error(run.report, localized.localization.error().describe());
    return;
  }
  add_findings(run, localized.localization->findings);
  run.report.localization = std::move(*localized.localization);
}

// One exporter's run, written: its report, and the check step's summary of the exported model
// (none when the export or the check did not get that far).
struct FinishedRun {
  Report report;
  std::optional<ModelSummary> exported;
};

// One exporter's run: every step into `out` (a staging folder); `published` is the run folder of
// the earlier run (its golden set is carried over). The report is written by write_run once the
// folder it will be published as is known.
Expected<FinishedRun> run_into(const PipelineOptions& options, const fs::path& out, const fs::path& published,
                               std::ostream& progress) {
  FinishedRun finished;
  Report& report = finished.report;
  report.model = options.export_options.model;
  report.framework = spec_framework(options.export_options);
  report.versions = tool_versions();
  Run run{.options = options, .out = out, .published = published, .progress = progress, .report = report};
  // A golden freeze killed between its two renames left the old set as ".golden.old-PID".
  recover_interrupted_publish(published / "golden");
  run_steps(run);
  if (run.usage_error) return std::unexpected(std::move(*run.usage_error));
  localize_after_parity(run);
  keep_earlier_golden(run);
  report.onnx_model = run.model;
  merge_frozen_dimension_evidence(report.findings);
  demote_contradicted_frozen_warnings(report);
  drop_weak_evidence_without_a_finite_reference(report.findings);
  point_follow_ons_at_causes(report.findings);
  if (run.check) {
    const auto* exported = find_step(report, "export");
    const auto* figures = exported ? exported->result_as<ExportFigures>() : nullptr;
    report.signature = model_signature(run.check->summary, figures ? figures->exporter : std::string());
  }
  answer_headline(run, report);
  finish_report(report);
  if (run.check) finished.exported = run.check->summary;
  return finished;
}

// The run's report and marker into `out`, its paths naming `shown`, the folder `out` becomes.
Expected<void> write_run(Report& report, const fs::path& out, const fs::path& shown, const std::string& command) {
  name_published_paths(report, out, shown);
  ONNXPROOF_TRY(write_run_marker(out, command, report.model));
  return write_report(report, out);
}

// The figures of one exporter's finished run for the side-by-side table.
ExporterSummary summarize_exporter_run(const FinishedRun& run, const std::string& exporter) {
  const Report& report = run.report;
  ExporterSummary summary;
  summary.exporter = exporter;
  summary.run_folder = exporter;
  summary.verdict = report.verdict;
  summary.shipped_model = shipped_model_name(report);
  for (const auto& step : report.steps) {
    summary.total_seconds += step.seconds;
    if (step.name == "export") summary.export_seconds = step.seconds;
  }
  if (run.exported) {
    summary.exported = true;
    summary.nodes = run.exported->node_count;
    summary.initializers = run.exported->initializer_count;
    summary.initializer_bytes = run.exported->initializer_bytes;
    for (const auto& [domain, version] : run.exported->opset_imports) {
      if (domain == "ai.onnx") summary.opset = version;
    }
  }
  if (report.parity) {
    for (const auto& row : report.parity->rows) {
      if (!row.compared()) continue;
      auto& [abs, rel] = summary.max_error[row.output];
      abs = std::max(abs, row.comparison.max_abs);
      rel = std::max(rel, row.comparison.max_rel);
    }
  }
  std::set<std::string> codes;
  for (const auto& finding : report.findings) {
    if (finding.severity == Severity::error && codes.insert(std::string(finding.code_name())).second)
      summary.error_codes.emplace_back(finding.code_name());
    if (finding.severity == Severity::warning) ++summary.warnings;
  }
  return summary;
}

// --exporter both: a run folder per exporter inside the one published folder (the two its source
// framework compares: dynamo and torchscript, or tf2onnx and keras), and a report that puts them
// side by side; its verdict passes only when both runs pass.
struct BothRuns {
  Report report;                                     // the side-by-side one
  std::vector<std::pair<std::string, Report>> runs;  // each exporter's, written once the folder is known
};

Expected<BothRuns> run_both_exporters(const PipelineOptions& options, const fs::path& staging,
                                      const fs::path& published, std::ostream& progress) {
  BothRuns both;
  Report& report = both.report;
  report.model = options.export_options.model;
  report.framework = spec_framework(options.export_options);
  report.versions = tool_versions();
  for (const std::string_view compared : source_framework(report.framework)->compared) {
    const std::string exporter(compared);
    progress << "onnxproof pipeline: proving the " << exporter << " exporter's model\n" << std::flush;
    PipelineOptions one = options;
    one.export_options.exporter = exporter;
    std::error_code ignored;
    fs::create_directory(staging / exporter, ignored);
    const auto start = std::chrono::steady_clock::now();
    ONNXPROOF_TRY_ASSIGN(FinishedRun run, run_into(one, staging / exporter, published / exporter, progress));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Verdict verdict = run.report.verdict;
    report.steps.push_back(
        {.name = exporter,
         .status = status_from(verdict),
         .seconds = seconds,
         .reason = fmt::format("verdict {}; {}", verdict_name(verdict), (staging / exporter / "report.md").string())});
    report.exporters.push_back(summarize_exporter_run(run, exporter));
    both.runs.emplace_back(exporter, std::move(run.report));
  }
  finish_report(report);
  return both;
}

// True when the run folder holds a run whose report says it passed.
bool passed_before(const fs::path& published) {
  const auto report = read_published_report(published, ErrorCode::invalid_input);
  return report && report->verdict == "pass";
}

// Where a run is published: its run folder, except that a run that does not pass never replaces
// one that passed (the user's last good model and report stay); it goes beside it, as RUN.failed,
// replacing the one an earlier failed re-run left there.
fs::path publish_target(const fs::path& published, Verdict verdict) {
  if (verdict == Verdict::pass || !passed_before(published)) return published;
  const fs::path folder = published.has_filename() ? published : published.parent_path();
  return folder.parent_path() / (folder.filename().string() + ".failed");
}

}  // namespace

Expected<Report> run_pipeline(const PipelineOptions& options, std::ostream& progress) {
  const fs::path published = options.export_options.out;
  ONNXPROOF_TRY(validate_export_options(options.export_options));
  ONNXPROOF_TRY(validate_model_file(options.export_options.model));
  ONNXPROOF_TRY(require_replaceable_run_folder(published));
  // The run is built in a staging folder and published in one step at the end: until then the
  // last run's folder stays as it was, and an interrupted run leaves it intact.
  ONNXPROOF_TRY_ASSIGN(auto staging, StagingFolder::create(published));
  BothRuns built;
  const bool both = options.export_options.exporter == "both";
  if (both) {
    ONNXPROOF_TRY_ASSIGN(built, run_both_exporters(options, staging.path(), published, progress));
  } else {
    ONNXPROOF_TRY_ASSIGN(auto run, run_into(options, staging.path(), published, progress));
    built.report = std::move(run.report);
  }
  Report& report = built.report;
  const fs::path target = publish_target(published, report.verdict);
  if (target != published) {
    ONNXPROOF_TRY(require_replaceable_run_folder(target));
    progress << "onnxproof pipeline: the earlier run in " << published.string()
             << " passed and is kept; this run, verdict " << verdict_name(report.verdict) << ", goes to "
             << target.string() << '\n'
             << std::flush;
  }
  const fs::path shown = options.shown_as.empty() || target != published ? target : options.shown_as;
  for (auto& [exporter, run] : built.runs)
    ONNXPROOF_TRY(write_run(run, staging.path() / exporter, shown / exporter, "onnxproof pipeline"));
  ONNXPROOF_TRY(
      write_run(report, staging.path(), shown, both ? "onnxproof pipeline --exporter both" : "onnxproof pipeline"));
  if (options.before_publish && !both && options.before_publish(report, {staging.path(), shown}))
    ONNXPROOF_TRY(write_report(report, staging.path()));
  ONNXPROOF_TRY(staging.publish(target));
  report.run_folder = target;
  return report;
}

}  // namespace onnxproof
