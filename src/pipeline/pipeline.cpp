#include "onnxproof/pipeline/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <set>

#include "onnxproof/core/run_folder.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/export/float16.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/localize/localize.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/parity/generation.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/report/generation_report.h"
#include "onnxproof/report/ship_summary.h"
#include "onnxproof/report/simplify_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

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
  std::optional<Reference> reference{};    // PyTorch's data, read once after the export
  std::optional<Error> reference_error{};  // why it could not be read
  FrozenShapeOptions frozen{};             // the export's declared axes, for check
  std::optional<CheckResult> check{};      // set by check
  std::optional<OpsAudit> ops{};           // set by ops
  std::string golden_evidence{};           // what the golden step did
  bool kept_golden = false;                // the golden set of an earlier run, kept without the golden step
  std::optional<Error> usage_error{};      // a bad option: the run stops, the CLI exits 2
};

// A step that could not do its job: status error, the reason in one line.
StepReport step_error(StepReport step, const Error& error) {
  step.status = StepStatus::error;
  step.reason = error.describe();
  return step;
}

void add_findings(Run& run, const std::vector<Finding>& findings) {
  run.report.findings.insert(run.report.findings.end(), findings.begin(), findings.end());
}

StepReport export_step(Run& run) {
  StepReport step{.name = "export"};
  // The default opset respects every --target's table as well as ONNX and ONNX Runtime.
  ExportOptions options = run.options.export_options;
  options.out = run.out;
  const OpsetLimit limit = newest_supported_opset(run.options.targets);
  options.opset_ceiling = limit.opset;
  options.opset_ceiling_reason = limit.reason;
  options.opset_op_limits = limit.op_limits;
  auto result = run_export(options, run.progress);
  if (!result) {
    if (result.error().code() == ErrorCode::usage) run.usage_error = result.error();
    return step_error(step, result.error());
  }
  add_findings(run, result->findings);
  if (run.report.model.empty()) run.report.model = result->spec;  // an adopted export (--from-export)
  // The front end's versions as that interpreter reported them, named apart from the engine's.
  for (const auto& [tool, version] : result->versions) {
    if (tool == "onnxproof") continue;
    run.report.versions.emplace_back(tool == "onnx" ? "onnx (python)" : tool, version);
  }
  step.details = {
      {"exporter", result->exporter}, {"sha256", result->sha256}, {"reference_sets", result->reference_sets}};
  if (fs::is_regular_file(run.out / "exporter_report.md")) run.report.exporter_report = "exporter_report.md";
  if (result->model.empty()) {
    step.status = StepStatus::fail;
    step.reason = "the export failed; see the findings";
    return step;
  }
  run.model = result->model;
  run.exported = result->model;
  run.frozen = result->frozen;
  if (auto reference = read_reference(run.out / "reference"))
    run.reference = std::move(*reference);
  else
    run.reference_error = reference.error();
  step.status = status_from(true, result->findings);
  if (has_finding(result->findings, FindingCode::reference_not_finite, Severity::error)) {
    // Nothing to compare with: the proof cannot be made, which is no verdict on the export.
    step.status = StepStatus::error;
    step.reason = "PyTorch's outputs hold no finite value on any case: nothing can be proved (REFERENCE_NOT_FINITE)";
  }
  return step;
}

StepReport check_step(Run& run) {
  StepReport step{.name = "check"};
  auto model = load_model(run.model);
  if (!model) return step_error(step, model.error());
  CheckOptions options = run.options.check;
  options.frozen = run.frozen;
  auto result = check_model(*model, options);
  if (!result) return step_error(step, result.error());
  add_findings(run, result->findings);
  step.details = {{"checker", result->checker_passed ? "pass" : "fail"},
                  {"shape_inference", result->shape_inference_passed ? "pass" : "fail"},
                  {"nodes", result->summary.node_count},
                  {"operator_types", result->summary.operators.size()}};
  step.status = status_from(result->checker_passed && result->shape_inference_passed, result->findings);
  if (run.reference) mark_random_outputs(model->proto, *run.reference);  // for simplify's proof, parity, golden
  run.check = std::move(*result);
  return step;
}

// A defect of onnxproof's own simplifier is not the user's: its findings become warnings that
// say the export is proved as it is (the rule's name, when the skip-one-pass rerun found it).
void add_simplify_defect(Run& run, std::vector<Finding> findings) {
  for (auto& finding : findings) {
    finding.severity = Severity::warning;
    finding.message += "; onnxproof's defect, not the model's: the export is proved as it is";
  }
  add_findings(run, findings);
}

// Simplifies the export into OUT/model.sim.onnx when that changes anything and the proof holds;
// the later steps then prove and audit the simplified model, the one meant to ship. When the
// simplifier fails (an error, an invalid model, a failed proof) the later steps prove the export
// unchanged and the step passes with a SIMPLIFY_CHANGED_OUTPUTS warning: the verdict is about the
// model, and the shipped model is the one proved.
StepReport simplify_step(Run& run) {
  StepReport step{.name = "simplify"};
  const fs::path simplified = run.out / "model.sim.onnx";
  auto outcome = simplify_file(run.model, simplified, SimplifyOptions{}, run.reference ? &*run.reference : nullptr,
                               run.options.parity.tolerance, /*copy_when_unchanged=*/false);
  step.status = StepStatus::pass;
  if (!outcome && outcome.error().code() == ErrorCode::invalid_input) {
    // The model's problem (the check step reports it), not simplify's: no defect of ours to report.
    step.reason = "the export is kept: " + outcome.error().describe();  // "... is invalid, so it is not simplified"
    return step;
  }
  if (!outcome) {
    step.reason = "simplify could not complete; the export is kept: " + outcome.error().describe();
    add_simplify_defect(run, {{FindingCode::simplify_changed_outputs, Severity::warning, "simplify",
                               "simplify could not complete: " + outcome.error().describe(), "",
                               "report the model: a simplify rule or the proof failed on it"}});
    return step;
  }
  const auto& result = outcome->result;
  step.details = simplify_outcome_to_json(*outcome);
  if (!outcome->culprit_pass.empty()) step.details["culprit_pass"] = outcome->culprit_pass;
  if (has_errors(outcome->proof.findings)) {
    step.reason = outcome->culprit_pass.empty()
                      ? "the simplified model was refused (see the warning); the export is kept"
                      : fmt::format("the rule '{}' changed the model (see the warning); the export is kept",
                                    outcome->culprit_pass);
    add_simplify_defect(run, outcome->proof.findings);
  } else if (!result.changed()) {
    add_findings(run, outcome->proof.findings);
    step.reason = "nothing to simplify";
  } else if (!outcome->written) {
    add_findings(run, outcome->proof.findings);
    step.reason = "no case could prove the simplified model; the export is kept";
  } else {
    add_findings(run, outcome->proof.findings);
    step.reason = fmt::format("{} -> {} nodes, proved on {} cases: model.sim.onnx", result.nodes_before(),
                              result.nodes_after(), outcome->proof.cases);
    run.model = simplified;
  }
  return step;
}

StepReport ops_step(Run& run) {
  StepReport step{.name = "ops"};
  auto model = load_model(run.model);
  if (!model) return step_error(step, model.error());
  OpsAudit audit = audit_operators(model->proto, run.options.targets);
  add_findings(run, audit.findings);
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& table : audit.tables) targets.push_back(table.target + ": " + table.runtime);
  step.details = {{"targets", targets}, {"operators", audit.operators.size()}};
  step.status = status_from(true, audit.findings);
  run.ops = std::move(audit);
  return step;
}

StepReport parity_step(Run& run) {
  StepReport step{.name = "parity"};
  if (!run.reference) return step_error(step, *run.reference_error);
  ParityOptions options = run.options.parity;
  options.progress = &run.progress;
  // The golden step may freeze them; not a float16 copy's, since the golden set is the export's.
  options.keep_cpu_outputs = run.options.golden && options.precision != DType::float16;
  if (std::find(options.providers.begin(), options.providers.end(), "tensorrt") != options.providers.end()) {
    options.tensorrt_cache = run.out / "trt-cache";  // TensorRT's built engines, kept with the run
    std::error_code ec;
    fs::create_directories(options.tensorrt_cache, ec);
    if (ec) return step_error(step, Error(ErrorCode::io, "cannot create " + options.tensorrt_cache.string() + ": " + ec.message()));
  }
  fs::path proved = run.model;
  std::string kept_in_float32;
  if (options.precision == DType::float16) {
    // The float16 variant: the converted copy beside the export, proved in its place.
    run.progress << "onnxproof pipeline: converting the model to float16 (model.fp16.onnx)\n" << std::flush;
    const ExportOptions& exported = run.options.export_options;
    auto conversion = convert_to_float16(run.model, run.out / "model.fp16.onnx", exported.python, exported.timeout_seconds);
    if (!conversion) return step_error(step, conversion.error());
    proved = conversion->model;
    kept_in_float32 = conversion->kept_in_float32;
  }
  auto result = run_parity(proved, *run.reference, options);
  if (!result) return step_error(step, result.error());
  add_findings(run, result->findings);
  step.details = {{"cases", run.reference->cases.size()},
                  {"rows", result->rows.size()},
                  {"analyzers", result->analyzer_findings}};  // findings per kind, as simplify counts its rules
  if (options.precision == DType::float16) {
    step.details["precision"] = "fp16";
    step.details["model"] = "model.fp16.onnx";
    step.details["kept_in_float32"] = kept_in_float32;
  }
  step.status = result->passed() ? StepStatus::pass : StepStatus::fail;
  if (const auto* missing = result->provider_not_run()) {
    step.status = StepStatus::error;
    step.reason = fmt::format("provider {} could not run: {}", missing->provider, missing->reason);
  }
  run.report.parity = std::move(*result);
  return step;
}

// --generate N: the greedy loop through ONNX Runtime on every provider, against PyTorch's loop
// (reference/generation/, written by the export). Only in the pipeline when --generate is given.
StepReport generate_step(Run& run) {
  StepReport step{.name = "generate"};
  const fs::path folder = run.out / "reference" / "generation";
  std::error_code ec;
  if (!fs::is_regular_file(folder / "generation.json", ec)) {
    return step_error(step, Error(ErrorCode::not_found, "the export recorded no generation (reference/generation/generation.json)"));
  }
  std::vector<GenerationResult> results;
  for (const auto& provider : run.options.parity.providers) {
    const SessionOptions session{.provider = provider, .intra_op_threads = run.options.parity.intra_op_threads};
    auto result = prove_generation(run.model, folder, session, run.options.parity.tolerance);
    if (!result) return step_error(step, result.error());
    add_findings(run, result->findings);
    results.push_back(std::move(*result));
  }
  const bool passed = std::all_of(results.begin(), results.end(), [](const auto& result) { return result.passed(); });
  step.status = passed && !results.empty() ? StepStatus::pass : StepStatus::fail;
  step.details = generation_to_json(run.options.export_options.generate, results);
  if (!results.empty()) {
    const auto& first = results.front();
    step.reason = fmt::format("{} greedy steps, {} with identical tokens on {}{}", first.steps.size(),
                              first.identical_steps(), first.provider,
                              first.first_failure ? fmt::format("; first wrong at step {}", *first.first_failure) : "");
  }
  return step;
}

bool generation_wanted(const Run& run) { return run.options.export_options.generate > 0; }
// Golden outputs only when asked for (prove()'s default): an omitted step is not a skipped one.
bool golden_wanted(const Run& run) { return run.options.golden; }

// A copy of `from` at `to`, by hard links where the file system allows (the same bytes, no
// extra space), else by copying.
Expected<void> copy_folder(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
  if (ec) {
    fs::remove_all(to, ec);
    fs::copy(from, to, fs::copy_options::recursive, ec);
  }
  if (ec) return fail(ErrorCode::io, "cannot carry " + from.string() + " into the new run: " + ec.message());
  return {};
}

// With a golden set (from an earlier run, or in the user's --golden folder): verify the new
// export against it (drift fails the run). Without one: freeze the proved outputs.
StepReport golden_step(Run& run) {
  StepReport step{.name = "golden"};
  const bool users_folder = !run.options.golden_folder.empty();
  const fs::path golden = users_folder ? run.options.golden_folder : run.out / "golden";
  const fs::path previous = users_folder ? run.options.golden_folder : run.published / "golden";
  // The golden set holds the export's own outputs: the float16 variant's budget does not apply.
  GoldenOptions options{run.options.parity, run.report.versions};
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
      if (auto carried = copy_folder(previous, golden); !carried) return step_error(step, carried.error());
    }
    add_findings(run, result->findings);
    step.details = {{"action", "verify"}, {"model_changed", result->model_changed}};
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
  auto result = freeze_golden(run.model, *run.reference, golden, options, float16_proof ? nullptr : &*run.report.parity);
  run.report.parity->cpu_outputs.clear();  // written into golden/ (or not): no longer needed in memory
  if (!result) return step_error(step, result.error());
  step.details = {{"action", "freeze"}, {"data_sets", result->data_sets}};
  step.status = result->frozen ? StepStatus::pass : StepStatus::fail;
  run.golden_evidence = fmt::format("frozen now: {} data sets in {}", result->data_sets,
                                    users_folder ? golden.string() : std::string("golden/"));
  return step;
}

struct StepDefinition {
  std::string_view name;
  StepReport (*run)(Run&);
  bool needs_model;
  bool (*wanted)(const Run&) = nullptr;  // null: always in the pipeline; else only when it says so
};

// The pipeline, in order. Adding a step is adding a line here.
constexpr std::array k_steps = {
    StepDefinition{"export", export_step, false},    StepDefinition{"check", check_step, true},
    StepDefinition{"simplify", simplify_step, true}, StepDefinition{"ops", ops_step, true},
    StepDefinition{"parity", parity_step, true},     StepDefinition{"generate", generate_step, true, generation_wanted},
    StepDefinition{"golden", golden_step, true, golden_wanted},
};

const StepReport* find_step(const Report& report, std::string_view name) {
  for (const auto& step : report.steps) {
    if (step.name == name) return &step;
  }
  return nullptr;
}

// The golden set outlives a run that did not reach the golden step (a failed export, no model)
// or could not finish it: the baseline of an earlier run moves into the new run folder unchanged,
// or the next run would freeze whatever it exports as the new baseline.
void keep_earlier_golden(Run& run) {
  const fs::path golden = run.out / "golden";
  const fs::path previous = run.published / "golden";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(golden, ec)) || !fs::is_directory(fs::symlink_status(previous, ec))) return;
  if (auto kept = copy_folder(previous, golden); !kept) {
    run.golden_evidence = kept.error().describe();
    return;
  }
  const StepReport* step = find_step(run.report, "golden");
  const bool errored = step && step->status == StepStatus::error;
  run.golden_evidence = errored ? step->reason + "; the golden set of an earlier run is kept unchanged"
                        : !run.options.golden ? "no golden set asked for; the golden set of an earlier run is kept unchanged"
                                              : "kept the golden set of an earlier run; this run did not reach the golden step";
  run.kept_golden = true;
  for (auto& skipped : run.report.steps) {
    if (skipped.name == "golden" && skipped.status == StepStatus::skip)
      skipped.reason += "; the golden set of an earlier run is kept";
  }
}

// One finding per frozen axis: the static analysis (check), the differential trace (export) and
// the sweep (parity) may each see it. Findings naming the same node merge; a sweep failure at
// another size of the same axis (its evidence's sizes hold the axis) confirms the prediction.
void merge_frozen_dimension_evidence(std::vector<Finding>& findings) {
  std::vector<Finding> merged;
  std::map<std::string, std::size_t> by_where;
  for (auto& finding : findings) {
    if (finding.code != FindingCode::frozen_dimension || finding.where.empty()) {
      merged.push_back(std::move(finding));
      continue;
    }
    const auto [known, inserted] = by_where.emplace(finding.where, merged.size());
    if (inserted) {
      merged.push_back(std::move(finding));
      continue;
    }
    Finding& first = merged[known->second];
    first.message += " | " + finding.step + ": " + finding.message;
    if (finding.severity == Severity::error) first.severity = Severity::error;
    if (first.evidence.axis.empty()) first.evidence.axis = finding.evidence.axis;
  }
  std::vector<bool> folded(merged.size(), false);
  for (auto& finding : merged) {
    if (finding.code != FindingCode::frozen_dimension || finding.evidence.axis.empty()) continue;
    for (std::size_t i = 0; i < merged.size(); ++i) {
      const Finding& other = merged[i];
      const bool sweep = other.code == FindingCode::shape_rejected || other.code == FindingCode::parity_mismatch;
      if (folded[i] || !sweep || !other.evidence.sizes.contains(finding.evidence.axis)) continue;
      finding.severity = Severity::error;
      finding.message += " | confirmed by the sweep: " + other.message;
      folded[i] = true;
      break;
    }
  }
  findings.clear();
  for (std::size_t i = 0; i < merged.size(); ++i) {
    if (!folded[i]) findings.push_back(std::move(merged[i]));
  }
}

// A FROZEN_DIMENSION warning (a static suspect, a tracer's int, a range torch.export narrowed)
// is contradicted when every parity row passed and its axis (every axis, for a warning that names
// none) ran at two or more sizes: demoted to info, with the sizes that ran.
void demote_contradicted_frozen_warnings(Report& report) {
  if (!report.parity) return;
  // Every label's sizes, and whether every row passed.
  std::map<std::string, std::set<int64_t>> swept;
  bool all_passed = !report.parity->rows.empty();
  for (const auto& row : report.parity->rows) {
    for (const auto& [label, size] : row.sizes) swept[label].insert(size);
    all_passed = all_passed && row.status == RowStatus::pass;
  }
  if (report.parity->rows.empty() && !report.parity->detections.empty()) all_passed = true;
  // Detection sets are compared as sets, not rows: their cases count the same way.
  for (const auto& row : report.parity->detections) {
    for (const auto& [label, size] : row.sizes) swept[label].insert(size);
    all_passed = all_passed && row.passed;
  }
  if (!all_passed) return;
  for (auto& finding : report.findings) {
    if (finding.code != FindingCode::frozen_dimension || finding.severity != Severity::warning) continue;
    // A suspect on one axis needs that axis swept; one without an axis (a tracer's warning about a
    // Python int taken from some shape) needs every dynamic axis swept.
    std::vector<std::string> labels;
    if (!finding.evidence.axis.empty()) {
      labels.push_back(finding.evidence.axis);
    } else {
      for (const auto& [label, sizes] : swept) labels.push_back(label);
    }
    const bool contradicted = !labels.empty() && std::all_of(labels.begin(), labels.end(), [&](const std::string& l) {
      return swept.contains(l) && swept.at(l).size() >= 2;
    });
    if (!contradicted) continue;
    finding.severity = Severity::info;
    std::vector<std::string> evidence;
    for (const auto& label : labels) evidence.push_back(fmt::format("'{}' = {}", label, fmt::join(swept.at(label), ", ")));
    finding.message += fmt::format(" | contradicted by the sweep: every case at {} ran and matched PyTorch",
                                   fmt::join(evidence, "; "));
  }
}

bool ran(const StepReport* step) {
  return step && (step->status == StepStatus::pass || step->status == StepStatus::fail);
}

std::string yes_no(const StepReport* step, bool yes) { return !ran(step) ? "not checked" : yes ? "yes" : "no"; }

bool passed(const StepReport* step) { return step && step->status == StepStatus::pass; }

// How much the parity proof could see: which rule decided its rows, and the outputs whose
// comparison could not have shown a plausible bug (EVIDENCE_WEAK).
HeadlineAnswer evidence_answer(const Report& report, const StepReport* parity) {
  const char* question = "How strong is the evidence?";
  if (!report.parity || !ran(parity)) return {question, "not checked", "no parity comparison ran"};
  std::map<std::string, int> by_rule;
  int compared = 0;
  for (const auto& row : report.parity->rows) {
    if (!row.compared()) continue;
    ++compared;
    ++by_rule[rule_name(row.rule)];
  }
  for (const auto& row : report.parity->detections) {  // detection sets, matched as sets
    if (!row.note.empty()) continue;
    ++compared;
    ++by_rule[fmt::format("{} (detection sets)", rule_name(row.budget.rule))];
  }
  std::vector<std::string> rules;
  for (const auto& [rule, count] : by_rule) rules.push_back(fmt::format("{} {}", count, rule));
  std::set<std::string> weak;
  for (const auto& finding : report.findings) {
    if (finding.code == FindingCode::evidence_weak) weak.insert(finding.where);
  }
  const std::string rows = fmt::format("{} rows compared ({})", compared, fmt::join(rules, ", "));
  if (!weak.empty()) {
    return {question, "weak",
            fmt::format("{}; outputs {} passed on evidence too weak to show a plausible bug (EVIDENCE_WEAK)", rows,
                        fmt::join(weak, ", "))};
  }
  return {question, compared ? "strong" : "none", rows};
}

// The check step's summary of the exported model as the report's signature.
ModelSignature model_signature(const ModelSummary& summary, const std::string& exporter) {
  const auto values = [](const std::vector<ValueSummary>& list) {
    std::vector<SignatureValue> out;
    for (const auto& value : list) {
      SignatureValue entry{.name = value.name, .dtype = value.type, .dims = std::nullopt};
      if (value.has_shape) {
        entry.dims.emplace();
        for (const auto& dim : value.dims)
          entry.dims->push_back(dim.size ? std::to_string(*dim.size) : dim.symbol.empty() ? "?" : dim.symbol);
      }
      out.push_back(std::move(entry));
    }
    return out;
  };
  return {.exporter = exporter,
          .ir_version = summary.ir_version,
          .producer = summary.producer,
          .opsets = summary.opset_imports,
          .inputs = values(summary.inputs),
          .outputs = values(summary.outputs)};
}

// Which declared axes the sweep proved dynamic (two or more sizes compared) and which the model
// itself fixes (AXIS_FIXED_BY_MODEL): a user who declared too many axes reads it here.
std::string declared_axes_evidence(const Report& report) {
  std::set<std::string> fixed;
  for (const auto& finding : report.findings) {
    if (finding.code == FindingCode::axis_fixed_by_model && !finding.evidence.axis.empty()) fixed.insert(finding.evidence.axis);
  }
  std::map<std::string, std::set<int64_t>> swept;
  if (report.parity) {
    for (const auto& row : report.parity->rows) {
      if (!row.compared()) continue;
      for (const auto& [label, size] : row.sizes) swept[label].insert(size);
    }
  }
  std::vector<std::string> dynamic;
  for (const auto& [label, sizes] : swept) {
    if (sizes.size() > 1) dynamic.push_back(label);
  }
  std::string said;
  if (!dynamic.empty()) said += fmt::format("; proved dynamic: {}", fmt::join(dynamic, ", "));
  if (!fixed.empty())
    said += fmt::format("; declared dynamic but fixed by the model (AXIS_FIXED_BY_MODEL, kept static): {}",
                        fmt::join(fixed, ", "));
  return said;
}

// MISSION.md's five headline questions, answered from the steps' typed results, and the evidence.
void answer_headline(const Run& run, Report& report) {
  const auto& findings = report.findings;
  const auto* parity = find_step(report, "parity");
  // The sizes that ran and, apart, the ones the model refused: a list of the first alone reads
  // as a pass.
  std::set<std::string> sizes, refused;
  if (report.parity) {
    for (const auto& row : report.parity->rows) {
      for (const auto& [label, size] : row.sizes)
        (row.compared() ? sizes : refused).insert(fmt::format("{}={}", label, size));
    }
    for (const auto& row : report.parity->detections) {
      for (const auto& [label, size] : row.sizes) sizes.insert(fmt::format("{}={}", label, size));
    }
  }
  for (const auto& size : sizes) refused.erase(size);
  std::string shape_evidence = sizes.empty() ? "no shape case ran" : fmt::format("ran {}", fmt::join(sizes, ", "));
  if (!refused.empty()) shape_evidence += fmt::format("; refused {}", fmt::join(refused, ", "));
  shape_evidence += declared_axes_evidence(report);
  const bool shapes_ok = !has_finding(findings, FindingCode::shape_rejected, Severity::error) &&
                         !has_finding(findings, FindingCode::frozen_dimension, Severity::error) &&
                         !has_finding(findings, FindingCode::run_failed, Severity::error);
  report.headline.push_back(
      {"Does the exported model accept every batch, sequence length and image size production sends?",
       yes_no(parity, shapes_ok),
       shape_evidence});

  const auto* check = find_step(report, "check");
  const bool aten = has_finding(findings, FindingCode::custom_domain_op, Severity::error);
  const auto word = [](bool ok) { return ok ? "pass" : "fail"; };
  report.headline.push_back(
      {"Did the checker and shape inference pass, with no aten operators left?", yes_no(check, passed(check) && !aten),
       run.check ? fmt::format("checker {}, shape inference {}{}", word(run.check->checker_passed),
                               word(run.check->shape_inference_passed), aten ? ", ATen fallback nodes left" : "")
                 : (check ? check->reason : "")});

  const auto* ops = find_step(report, "ops");
  std::vector<std::string> targets;
  if (run.ops) {
    for (const auto& table : run.ops->tables) targets.push_back(table.target + ": " + table.runtime);
  }
  const bool restricted = has_finding(findings, FindingCode::op_restricted_by_target, Severity::warning);
  report.headline.push_back(
      {"Is every operator supported by each target runtime at this opset?", yes_no(ops, passed(ops)),
       targets.empty() ? (ops ? ops->reason : "")
                       : fmt::format("{}{}", fmt::join(targets, "; "),
                                     restricted ? " (some with restrictions: see the warnings)" : "")});

  std::vector<std::string> providers;
  if (report.parity) {
    for (const auto& p : report.parity->providers) providers.push_back(p.provider + (p.ran ? " ran" : " skipped"));
  }
  report.headline.push_back(
      {"Does ONNX Runtime match PyTorch within tolerance, on every provider tested, with no argmax flips?",
       yes_no(parity, passed(parity)),
       fmt::format("{} comparisons; providers: {}",
                   report.parity ? report.parity->rows.size() + report.parity->detections.size() : 0,
                   providers.empty() ? "none" : fmt::format("{}", fmt::join(providers, ", ")))});

  report.headline.push_back(evidence_answer(report, parity));

  const auto* golden = find_step(report, "golden");
  const bool golden_said =
      golden && (golden->status != StepStatus::error || run.kept_golden) && !run.golden_evidence.empty();
  const std::string not_asked = "no golden set asked for (pipeline --golden DIR, prove(golden=DIR))";
  report.headline.push_back({"Do the saved golden outputs still hold for the latest export?",
                             yes_no(golden, passed(golden)),
                             golden_said ? run.golden_evidence
                                         : (golden ? golden->reason : (run.golden_evidence.empty() ? not_asked : run.golden_evidence))});
}

}  // namespace

std::filesystem::path default_run_folder(const std::string& spec) {
  std::string name;
  const auto colon = spec.rfind(':');
  const std::string target = colon == std::string::npos ? spec : spec.substr(0, colon);
  if (is_model_family(spec)) {  // hf:BertModel:num_hidden_layers=1 -> BertModel
    const std::string rest = spec.substr(spec.find(':') + 1);
    name = rest.substr(0, rest.find(':'));
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
  for (const auto& definition : k_steps) {
    if (definition.wanted != nullptr && !definition.wanted(run)) continue;
    if (definition.needs_model && run.model.empty()) {
      run.report.steps.push_back(
          {.name = std::string(definition.name), .reason = "no model: the export did not produce one"});
      continue;
    }
    run.progress << "onnxproof pipeline: " << definition.name << '\n' << std::flush;
    const auto start = std::chrono::steady_clock::now();
    StepReport step = definition.run(run);
    step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  auto capture = run.options.capture ? run.options.capture : python_capture(exported.python, exported.timeout_seconds);
  // On the export as written: the simplify proof showed it computes what model.sim.onnx does, and
  // its nodes keep the exporter's module scopes, which a fold may move across modules.
  LocalizeCaseOptions options{.run = run.out,
                              .model = run.exported.empty() ? run.model : run.exported,
                              .target = *row,
                              .parity = &*run.report.parity,
                              .tolerance = run.options.parity.tolerance,
                              .capture = std::move(capture),
                              .progress = &run.progress};
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

// One exporter's run: every step into `out` (a staging folder), the report written there; paths
// in it name `published`, the folder `out` becomes.
Expected<FinishedRun> run_into(const PipelineOptions& options, const fs::path& out, const fs::path& published,
                               std::ostream& progress) {
  FinishedRun finished;
  Report& report = finished.report;
  report.model = options.export_options.model;
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
  point_follow_ons_at_causes(report.findings);
  if (run.check) {
    const auto* exported = find_step(report, "export");
    report.signature = model_signature(run.check->summary, exported ? exported->details.value("exporter", std::string())
                                                                    : std::string());
  }
  answer_headline(run, report);
  finish_report(report);
  name_published_paths(report, out, published);
  ONNXPROOF_TRY(write_run_marker(out, "onnxproof pipeline", report.model));
  ONNXPROOF_TRY(write_report(report, out));
  if (run.check) finished.exported = run.check->summary;
  return finished;
}

// The figures of one exporter's finished run for the side-by-side table.
ExporterSummary summarize_exporter_run(const FinishedRun& run, const std::string& exporter) {
  const Report& report = run.report;
  ExporterSummary summary;
  summary.exporter = exporter;
  summary.run_folder = exporter;
  summary.verdict = report.verdict;
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

// --exporter both: a run folder per exporter inside the one published folder, and a report that
// puts them side by side; its verdict passes only when both runs pass.
Expected<Report> run_both_exporters(const PipelineOptions& options, const fs::path& staging, const fs::path& published,
                                    std::ostream& progress) {
  Report report;
  report.model = options.export_options.model;
  report.versions = tool_versions();
  for (const std::string exporter : {"dynamo", "torchscript"}) {
    progress << "onnxproof pipeline: proving the " << exporter << " exporter's model\n" << std::flush;
    PipelineOptions one = options;
    one.export_options.exporter = exporter;
    std::error_code ignored;
    fs::create_directory(staging / exporter, ignored);
    const auto start = std::chrono::steady_clock::now();
    ONNXPROOF_TRY_ASSIGN(const FinishedRun run, run_into(one, staging / exporter, published / exporter, progress));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Verdict verdict = run.report.verdict;
    const StepStatus status = status_from(verdict);
    report.steps.push_back({.name = exporter,
                            .status = status,
                            .seconds = seconds,
                            .reason = fmt::format("verdict {}; {}", verdict_name(verdict),
                                                  (published / exporter / "report.md").string())});
    report.exporters.push_back(summarize_exporter_run(run, exporter));
  }
  finish_report(report);
  ONNXPROOF_TRY(write_run_marker(staging, "onnxproof pipeline --exporter both", report.model));
  ONNXPROOF_TRY(write_report(report, staging));
  return report;
}

}  // namespace

Expected<Report> run_pipeline(const PipelineOptions& options, std::ostream& progress) {
  const fs::path published = options.export_options.out;
  ONNXPROOF_TRY(validate_export_options(options.export_options));
  ONNXPROOF_TRY(require_replaceable_run_folder(published));
  // The run is built in a staging folder and published in one step at the end: until then the
  // last run's folder stays as it was, and an interrupted run leaves it intact.
  ONNXPROOF_TRY_ASSIGN(auto staging, StagingFolder::create(published));
  Report report;
  if (options.export_options.exporter == "both") {
    ONNXPROOF_TRY_ASSIGN(report, run_both_exporters(options, staging.path(), published, progress));
  } else {
    ONNXPROOF_TRY_ASSIGN(auto run, run_into(options, staging.path(), published, progress));
    report = std::move(run.report);
  }
  ONNXPROOF_TRY(staging.publish());
  return report;
}

}  // namespace onnxproof
