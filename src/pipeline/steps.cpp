// The pipeline's steps, each a function from the Run to its StepReport, and their table.
#include "run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/float16.h"
#include "onnxproof/golden/golden.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/openvino_table.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/parity/generation.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/report/generation_report.h"
#include "onnxproof/report/simplify_report.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof::pipeline_run {

StepReport step_error(StepReport step, const Error& error) {
  step.status = StepStatus::error;
  step.reason = error.describe();
  return step;
}

void add_findings(Run& run, const std::vector<Finding>& findings) {
  run.report.findings.insert(run.report.findings.end(), findings.begin(), findings.end());
}

namespace {

StepReport export_step(Run& run) {
  StepReport step{.name = "export"};
  // The default opset respects every --target's table as well as ONNX and ONNX Runtime.
  ExportOptions options = run.options.export_options;
  options.out = run.out;
  OpsetLimit limit = newest_supported_opset(run.options.targets);
  fit_opset_limit_to_releases(limit, run.options.releases);
  options.opset_ceiling = limit.opset;
  options.opset_ceiling_reason = limit.reason;
  options.opset_op_limits = limit.op_limits;
  options.opset_portable = limit.portable;
  options.opset_portable_reason = limit.portable_reason;
  auto result = run_export(options, run.progress);
  if (!result) {
    if (result.error().code() == ErrorCode::usage) run.usage_error = result.error();
    return step_error(step, result.error());
  }
  add_findings(run, result->findings);
  if (run.report.model.empty()) run.report.model = result->spec;  // an adopted export (--from-export)
  run.report.framework = result->framework;                       // what exported it, as export.json says
  run.report.given_file = result->given_file;
  // The front end's versions as that interpreter reported them, named apart from the engine's.
  for (const auto& [tool, version] : result->versions) {
    if (tool == "onnxproof") continue;
    run.report.versions.emplace_back(tool == "onnx" ? "onnx (python)" : tool, version);
  }
  step.details = {
      {"exporter", result->exporter}, {"sha256", result->sha256}, {"reference_sets", result->reference_sets}};
  if (result->front_end_peak_mib) step.details["front_end_peak_mib"] = *result->front_end_peak_mib;
  if (fs::is_regular_file(run.out / "exporter_report.md")) run.report.exporter_report = "exporter_report.md";
  if (result->model.empty()) {
    step.status = StepStatus::fail;
    step.reason = "the export failed; see the findings";
    return step;
  }
  run.model = result->model;
  run.exported = result->model;
  run.frozen = result->frozen;
  // The opset and why: the report says what the default chose (a portable opset, the targets, a
  // raise for an operator), not only export.json.
  if (result->opset > 0) {
    step.details["opset"] = result->opset;
    step.reason = result->given_file ? fmt::format("the file as given, opset {}", result->opset)
                                     : fmt::format("{} exporter, opset {}: {}", result->exporter, result->opset,
                                                   result->opset_chosen_by);
  }
  if (auto reference = read_reference(run.out / "reference")) {
    run.reference = std::move(*reference);
    run.reference->framework = result->framework;
  } else {
    run.reference_error = reference.error();
  }
  step.status = status_from(true, result->findings);
  if (has_finding(result->findings, FindingCode::reference_not_finite, Severity::error)) {
    // Nothing to compare with: the proof cannot be made, which is no verdict on the export.
    step.status = StepStatus::error;
    step.reason = source_title(result->framework) +
                  "'s outputs hold no finite value on any case: nothing can be proved (REFERENCE_NOT_FINITE)";
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
  // With a reference the parity step proves the simplified model (one session per model and
  // level, every case run once); a float16 proof converts it first, so it is proved here.
  const SimplifyOptions options{.proved_by_caller = run.reference && run.options.parity.precision != DType::float16};
  auto outcome = simplify_file(run.model, simplified, options, run.reference ? &*run.reference : nullptr,
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
  } else if (options.proved_by_caller) {
    step.reason = fmt::format("{} -> {} nodes: model.sim.onnx, proved by the parity step", result.nodes_before(),
                              result.nodes_after());
    step.details["proof"] = {{"by", "parity"}};
    run.model = simplified;
    run.simplified_unproved = true;
  } else {
    add_findings(run, outcome->proof.findings);
    step.reason = fmt::format("{} -> {} nodes, proved on {} cases: model.sim.onnx", result.nodes_before(),
                              result.nodes_after(), outcome->proof.cases);
    run.model = simplified;
  }
  return step;
}

}  // namespace

StepReport ops_step(Run& run) {
  StepReport step{.name = "ops"};
  auto model = load_model(run.model);
  if (!model) return step_error(step, model.error());
  std::vector<SupportTable> tables = run.options.targets;
  use_installed_openvino(tables, run.model, model->proto);  // its own answer where it is installed
  OpsAudit audit = audit_operators(model->proto, std::move(tables));
  add_findings(run, audit.findings);
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& table : audit.tables) targets.push_back(table.target + ": " + table.runtime);
  // Which ONNX Runtime releases would load it, by its opset and IR version, none of them run.
  const int opset = default_domain_opset(model->proto);
  const auto forecast = forecast_releases(opset, static_cast<int>(model->proto.ir_version()));
  step.details = {
      {"targets", targets}, {"operators", audit.operators.size()}, {"releases", forecast_to_json(forecast)}};
  step.reason = forecast_summary(forecast);
  step.status = status_from(true, audit.findings);
  run.ops = std::move(audit);
  return step;
}

namespace {

// The float16 variant of `model` at `out` (ONNX Runtime's converter, --keep-float32's nodes kept).
Expected<Float16Conversion> float16_copy(const Run& run, const fs::path& model, const fs::path& out) {
  const ExportOptions& exported = run.options.export_options;
  return convert_to_float16(model, out, exported.python, exported.timeout_seconds, run.options.keep_float32);
}

// A simplified model that failed parity: is the simplifier to blame (settle_simplified_proof)? The
// export is proved the same way, its float16 copy beside (export.fp16.onnx) for a float16 proof,
// which becomes model.fp16.onnx when the export is kept.
void settle_against_export(Run& run, const ParityOptions& options, ParityResult& result) {
  const bool float16 = options.precision == DType::float16;
  const fs::path export_copy = run.out / "export.fp16.onnx";
  settle_simplified_proof(run, result, [&]() -> Expected<ParityResult> {
    if (!float16) return run_parity(run.exported, *run.reference, options);
    ONNXPROOF_TRY_ASSIGN(const auto conversion, float16_copy(run, run.exported, export_copy));
    return run_parity(conversion.model, *run.reference, options);
  });
  if (!float16) return;
  std::error_code ec;
  if (run.model == run.exported && fs::exists(export_copy, ec)) {
    fs::rename(export_copy, run.out / "model.fp16.onnx", ec);
  } else {
    fs::remove(export_copy, ec);
  }
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
    if (ec)
      return step_error(step,
                        Error(ErrorCode::io, "cannot create " + options.tensorrt_cache.string() + ": " + ec.message()));
  }
  fs::path proved = run.model;
  std::string kept_in_float32;
  if (options.precision == DType::float16) {
    // The float16 variant: the converted copy beside the export, proved in its place.
    run.progress << "onnxproof pipeline: converting the model to float16 (model.fp16.onnx)\n" << std::flush;
    auto conversion = float16_copy(run, run.model, run.out / "model.fp16.onnx");
    if (!conversion) return step_error(step, conversion.error());
    proved = conversion->model;
    kept_in_float32 = conversion->kept_in_float32;
  }
  auto result = run_parity(proved, *run.reference, options);
  if (!result) return step_error(step, result.error());
  if (run.model != run.exported) settle_against_export(run, options, *result);
  add_findings(run, result->findings);
  step.details = {{"cases", run.reference->cases.size()},
                  {"rows", result->rows.size()},
                  {"analyzers", result->analyzer_findings}};  // findings per kind, as simplify counts its rules
  if (options.precision == DType::float16) {
    step.details["precision"] = "fp16";
    step.details["model"] = "model.fp16.onnx";
    step.details["kept_in_float32"] = kept_in_float32;
    if (!run.options.keep_float32.empty()) step.details["nodes_kept_in_float32"] = run.options.keep_float32;
  }
  step.status = result->passed() ? StepStatus::pass : StepStatus::fail;
  if (const auto* missing = result->provider_not_run()) {
    step.status = StepStatus::error;
    step.reason = fmt::format("provider {} could not run: {}", missing->provider, missing->reason);
  }
  run.report.parity = std::move(*result);
  return step;
}

// --target ort-cpu@VERSION: the model proved again on each release named, each in a child of
// this binary with the release's library (runtime_versions.h); one line says which load and
// match it: "loads and matches on 1.22.1, 1.31.1; 1.18.0 refuses it: opset 23 is above the 21 it runs".
StepReport runtimes_step(Run& run) {
  StepReport step{.name = "runtimes"};
  auto model = load_model(run.model);
  if (!model) return step_error(step, model.error());
  const int opset = default_domain_opset(model->proto);
  const int ir_version = static_cast<int>(model->proto.ir_version());
  nlohmann::json releases = nlohmann::json::array();
  std::vector<std::string> matched, refused, failed, errors;
  for (const auto& release : run.options.releases) {
    const std::string folder = (release.openvino ? "openvino-" : "") + release.version;
    auto proof = prove_on_release(release, run.model, opset, ir_version, run.out / "reference",
                                  run.out / "runtimes" / folder, run.options.release_proof, run.progress);
    add_findings(run, proof.findings);
    releases.push_back(release_proof_to_json(proof));
    // ONNX Runtime's releases by their number, as before; OpenVINO's named.
    const std::string name = (release.openvino ? "OpenVINO " : "") + release.version;
    if (proof.outcome == "pass") matched.push_back(name);
    if (proof.outcome == "refused") refused.push_back(name + " refuses it: " + proof.reason);
    if (proof.outcome == "fail") failed.push_back(name + " loads it but does not match (see the findings)");
    if (proof.outcome == "error") errors.push_back(name + " could not be run: " + proof.reason);
  }
  std::vector<std::string> said;
  if (!matched.empty()) said.push_back(fmt::format("loads and matches on {}", fmt::join(matched, ", ")));
  for (const auto* group : {&failed, &refused, &errors}) said.insert(said.end(), group->begin(), group->end());
  step.reason = fmt::format("{}", fmt::join(said, "; "));
  step.details = {{"releases", releases}};
  step.status = !errors.empty()                     ? StepStatus::error
                : refused.empty() && failed.empty() ? StepStatus::pass
                                                    : StepStatus::fail;
  return step;
}

bool releases_wanted(const Run& run) { return !run.options.releases.empty(); }

// A run that fails at ONNX Runtime's default level and passes with its optimizer off.
Finding optimizer_changed_generation(const GenerationResult& result) {
  return Finding{
      .code = FindingCode::runtime_optimization_changed_outputs,
      .severity = Severity::error,
      .step = "generate",
      .message =
          fmt::format("greedy generation{} on {} goes wrong at step {} at ONNX Runtime's level '{}' and passes "
                      "with its graph optimizations disabled: an optimizer rewrite changes the decoder's results",
                      result.run.empty() ? "" : " (" + result.run + ")", result.provider,
                      result.first_failure.value_or(0), result.optimization),
      .where = fmt::format("generation step {}", result.first_failure.value_or(0)),
      .hint =
          "deploy with graph_optimization_level ORT_DISABLE_ALL (or the optimizer the parity step's localization "
          "names disabled), or report the rewrite to ONNX Runtime"};
}

// --generate N: the greedy loop through ONNX Runtime on every provider, against PyTorch's loop
// (reference/generation/, written by the export), each run (request) at ONNX Runtime's default
// level; a run that fails there runs again with the optimizer off, which names the optimizer
// when that one passes. Only in the pipeline when --generate is given.
StepReport generate_step(Run& run) {
  StepReport step{.name = "generate"};
  const fs::path folder = run.out / "reference" / "generation";
  std::error_code ec;
  if (!fs::is_regular_file(folder / "generation.json", ec)) {
    return step_error(
        step, Error(ErrorCode::not_found, "the export recorded no generation (reference/generation/generation.json)"));
  }
  std::vector<GenerationResult> results;
  for (const auto& provider : run.options.parity.providers) {
    SessionOptions session{.provider = provider,
                           .intra_op_threads = run.options.parity.intra_op_threads,
                           .disabled_optimizers = run.options.parity.disabled_optimizers};
    auto by_run =
        prove_generation(run.model, run.out, folder, session, run.options.parity.tolerance, run.report.framework);
    if (!by_run) return step_error(step, by_run.error());
    const bool any_failed =
        std::any_of(by_run->begin(), by_run->end(), [](const auto& result) { return !result.passed(); });
    std::vector<GenerationResult> unoptimized;
    if (any_failed && session.optimization != GraphOptimization::disabled) {
      session.optimization = GraphOptimization::disabled;
      auto again =
          prove_generation(run.model, run.out, folder, session, run.options.parity.tolerance, run.report.framework);
      if (!again) return step_error(step, again.error());
      unoptimized = std::move(*again);
    }
    for (std::size_t index = 0; index < by_run->size(); ++index) {
      auto& result = (*by_run)[index];
      add_findings(run, result.findings);
      if (index < unoptimized.size() && !result.passed()) {
        if (unoptimized[index].passed()) add_findings(run, {optimizer_changed_generation(result)});
        results.push_back(std::move(result));
        results.push_back(std::move(unoptimized[index]));
      } else {
        results.push_back(std::move(result));
      }
    }
  }
  const bool passed = std::all_of(results.begin(), results.end(), [](const auto& result) {
    return result.passed() || result.optimization == "disabled";  // the default level's row decides
  });
  step.status = passed && !results.empty() ? StepStatus::pass : StepStatus::fail;
  step.details = generation_to_json(
      results.empty() ? run.options.export_options.generate : static_cast<int>(results.front().steps.size()), results);
  if (!results.empty()) {
    const auto failed =
        std::find_if(results.begin(), results.end(), [](const auto& result) { return !result.passed(); });
    const auto& shown = failed == results.end() ? results.front() : *failed;
    std::set<std::string> requests;  // a request's label, whichever decoder file and provider ran it
    for (const auto& result : results) requests.insert(result.run.substr(0, result.run.find(", decoder_merged")));
    const auto runs = requests.size();
    step.reason =
        fmt::format("{} greedy steps in {} run(s), {} with identical tokens on {}{}{}", shown.steps.size(), runs,
                    shown.identical_steps(), shown.provider, shown.run.empty() ? "" : " (" + shown.run + ")",
                    shown.first_failure ? fmt::format("; first wrong at step {}", *shown.first_failure) : "");
  }
  return step;
}

// --generate, or an export (--from-export) that recorded a generation: it is part of its proof.
bool generation_wanted(const Run& run) {
  std::error_code ec;
  return run.options.export_options.generate > 0 ||
         fs::is_regular_file(run.out / "reference" / "generation" / "generation.json", ec);
}
// Golden outputs only when asked for (prove()'s default): an omitted step is not a skipped one.
bool golden_wanted(const Run& run) { return run.options.golden; }

// --no-simplify: no simplify step; the export is proved and shipped as written. A given file
// (--onnx) is proved as it is, never replaced by a simplified copy (`onnxproof simplify FILE`
// proposes one).
bool simplify_wanted(const Run& run) { return run.options.simplify && !run.report.given_file; }

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
    step.details = {{"action", "verify"},
                    {"model_changed", result->model_changed},
                    {"folder", users_folder ? golden.string() : "golden/"}};
    if (!result->generation.empty()) step.details["generation_runs"] = result->generation.size();
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
  step.details = {{"action", "freeze"},
                  {"data_sets", result->data_sets},
                  {"generation", !options.generation.empty()},
                  {"folder", users_folder ? golden.string() : "golden/"}};
  step.status = result->frozen ? StepStatus::pass : StepStatus::fail;
  run.golden_evidence = fmt::format("frozen now: {} data sets{} in {}", result->data_sets,
                                    options.generation.empty() ? "" : " and the generation",
                                    users_folder ? golden.string() : std::string("golden/"));
  return step;
}

}  // namespace

namespace {

// The pipeline, in order: what each step reads of the Run and what it publishes for the steps
// after it and the headline. Adding a step is a function above and a line here.
constexpr std::array k_steps = {
    StepDefinition{"export", export_step, "the options", "model, exported, reference, frozen; the export's findings",
                   false},
    StepDefinition{"check", check_step, "model, frozen", "check; random outputs marked in reference", true},
    StepDefinition{"simplify", simplify_step, "model, reference", "model (model.sim.onnx when proved)", true,
                   simplify_wanted},
    StepDefinition{"ops", ops_step, "model, the targets", "ops", true},
    StepDefinition{"parity", parity_step, "model, reference", "report.parity", true},
    StepDefinition{"quantize", quantize_step, "model, reference", "model.quant.onnx, reference-quant/; its findings",
                   true, quantize_wanted},
    StepDefinition{"runtimes", runtimes_step, "model, reference/, the releases", "runtimes/; the releases' findings",
                   true, releases_wanted},
    StepDefinition{"generate", generate_step, "model, reference/generation/", "the generation proof", true,
                   generation_wanted},
    StepDefinition{"golden", golden_step, "model, reference, report.parity", "golden/, golden_evidence", true,
                   golden_wanted},
};

}  // namespace

std::span<const StepDefinition> pipeline_steps() { return k_steps; }

}  // namespace onnxproof::pipeline_run
