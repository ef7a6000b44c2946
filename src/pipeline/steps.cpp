// The pipeline's steps, each a function from the Run to its StepReport, and their table.
#include "run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/float16.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/openvino_table.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/release_forecast.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/report/step_figures.h"
#include "onnxproof/simplify/simplify.h"
#include "proofs/generation/generation_proof.h"
#include "proofs/golden/golden_proof.h"
#include "proofs/runtimes/runtimes_proof.h"

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
  auto figures = std::make_shared<ExportFigures>();
  figures->exporter = result->exporter;
  figures->sha256 = result->sha256;
  figures->reference_sets = result->reference_sets;
  figures->front_end_peak_mib = result->front_end_peak_mib;
  step.result = figures;
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
    figures->opset = result->opset;
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
  auto figures = std::make_shared<CheckFigures>();
  figures->checker_passed = result->checker_passed;
  figures->shape_inference_passed = result->shape_inference_passed;
  figures->nodes = static_cast<std::size_t>(result->summary.node_count);
  figures->operator_types = result->summary.operators.size();
  step.result = figures;
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
  auto figures = std::make_shared<SimplifyFigures>();
  figures->outcome = *outcome;
  step.result = figures;
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
    figures->proved_by = SimplifyProvedBy::parity;
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
  auto figures = std::make_shared<OpsFigures>();
  for (const auto& table : audit.tables) figures->targets.push_back(table.target + ": " + table.runtime);
  figures->operators = audit.operators.size();
  // Which ONNX Runtime releases would load it, by its opset and IR version, none of them run.
  const int opset = default_domain_opset(model->proto);
  const auto forecast = forecast_releases(opset, static_cast<int>(model->proto.ir_version()));
  step.reason = forecast_summary(forecast);
  figures->releases = forecast;
  step.result = figures;
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
  auto figures = std::make_shared<ParityFigures>();
  figures->cases = run.reference->cases.size();
  figures->rows = result->rows.size();
  figures->analyzers = result->analyzer_findings;  // findings per kind, as simplify counts its rules
  figures->float16 = options.precision == DType::float16;
  figures->kept_in_float32 = kept_in_float32;
  figures->nodes_kept_in_float32 = run.options.keep_float32;
  step.result = figures;
  step.status = result->passed() ? StepStatus::pass : StepStatus::fail;
  if (const auto* missing = result->provider_not_run()) {
    step.status = StepStatus::error;
    step.reason = fmt::format("provider {} could not run: {}", missing->provider, missing->reason);
  }
  run.report.parity = std::move(*result);
  return step;
}

// --no-simplify: no simplify step; the export is proved and shipped as written. A given file
// (--onnx) is proved as it is, never replaced by a simplified copy (`onnxproof simplify FILE`
// proposes one).
bool simplify_wanted(const Run& run) { return run.options.simplify && !run.report.given_file; }

}  // namespace

namespace {

// The pipeline, in order: what each step reads of the Run and what it publishes for the steps
// after it and the headline. Adding a core step is a function above and a line here; a proof is
// a folder of src/proofs/ and a line here (or register_proof()).
std::vector<StepDefinition> built_in_steps() {
  return {
      StepDefinition{"export", export_step, "the options", "model, exported, reference, frozen; the export's findings",
                     false},
      StepDefinition{"check", check_step, "model, frozen", "check; random outputs marked in reference", true},
      StepDefinition{"simplify", simplify_step, "model, reference", "model (model.sim.onnx when proved)", true,
                     simplify_wanted},
      StepDefinition{"ops", ops_step, "model, the targets", "ops", true},
      StepDefinition{"parity", parity_step, "model, reference", "report.parity", true},
      StepDefinition{"quantize", quantize_step, "model, reference", "model.quant.onnx, reference-quant/; its findings",
                     true, quantize_wanted},
      runtimes_proof(),
      generation_proof(),
      golden_proof(),
  };
}

// The proofs register_proof() added, each with the step it runs before.
struct RegisteredProof {
  StepDefinition definition;
  std::string before;
};
std::mutex registry_mutex;
std::vector<RegisteredProof>& registry() {
  static std::vector<RegisteredProof> proofs;
  return proofs;
}

}  // namespace

std::vector<StepDefinition> pipeline_steps() {
  std::vector<StepDefinition> steps = built_in_steps();
  const std::lock_guard lock(registry_mutex);
  for (const auto& proof : registry()) {
    const auto before =
        std::find_if(steps.begin(), steps.end(), [&](const StepDefinition& step) { return step.name == proof.before; });
    steps.insert(before, proof.definition);
  }
  return steps;
}

Expected<void> register_proof(const StepDefinition& proof, std::string_view before) {
  const auto steps = pipeline_steps();
  if (std::any_of(steps.begin(), steps.end(), [&](const StepDefinition& step) { return step.name == proof.name; }))
    return fail(ErrorCode::usage, fmt::format("a step named '{}' is already in the pipeline", proof.name));
  const std::lock_guard lock(registry_mutex);
  registry().push_back({proof, std::string(before)});
  add_run_entries(proof.writes);
  return {};
}

bool unregister_proof(std::string_view name) {
  const std::lock_guard lock(registry_mutex);
  const auto found = std::find_if(registry().begin(), registry().end(),
                                  [&](const RegisteredProof& proof) { return proof.definition.name == name; });
  if (found == registry().end()) return false;
  remove_run_entries(found->definition.writes);
  registry().erase(found);
  return true;
}

}  // namespace onnxproof::pipeline_run
