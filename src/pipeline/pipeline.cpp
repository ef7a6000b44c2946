#include "onnxproof/pipeline/pipeline.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <map>
#include <set>

#include "onnxproof/golden/golden.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/ops/audit.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/versions.h"
#include "onnxproof/simplify/simplify.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

struct PipelineContext {
  const PipelineOptions& options;
  fs::path out;
  std::ostream& progress;
  Report& report;
  fs::path model;                      // set by the export step
  std::optional<ParityResult> parity;  // set by the parity step
  std::optional<Error> usage_error;    // a bad option: the run stops, the CLI exits 2
};

// A step that could not do its job: status error, the reason in one line.
StepReport step_error(StepReport step, const Error& error) {
  step.status = "error";
  step.reason = error.describe();
  return step;
}

void add_findings(PipelineContext& context, const std::vector<Finding>& findings) {
  context.report.findings.insert(context.report.findings.end(), findings.begin(), findings.end());
}

StepReport export_step(PipelineContext& context) {
  StepReport step;
  step.name = "export";
  // The default opset respects every --target's table as well as ONNX and ONNX Runtime.
  ExportOptions options = context.options.export_options;
  const OpsetLimit limit = newest_supported_opset(context.options.targets);
  options.opset_ceiling = limit.opset;
  options.opset_ceiling_reason = limit.reason;
  auto result = run_export(options, context.progress);
  if (!result) {
    if (result.error().code() == ErrorCode::usage) context.usage_error = result.error();
    step.status = "error";
    step.reason = result.error().describe();
    return step;
  }
  add_findings(context, result->findings);
  // The front end's versions as that interpreter reported them, named apart from the engine's.
  for (const auto& [tool, version] : result->versions) {
    if (tool == "onnxproof") continue;
    context.report.versions.emplace_back(tool == "onnx" ? "onnx (python)" : tool, version);
  }
  step.details = {
      {"exporter", result->exporter}, {"sha256", result->sha256}, {"reference_sets", result->reference_sets}};
  if (result->model.empty()) {
    step.status = "fail";
    step.reason = "the export failed; see the findings";
    return step;
  }
  context.model = result->model;
  step.status = has_errors(result->findings) ? "fail" : "pass";
  return step;
}

StepReport check_step(PipelineContext& context) {
  StepReport step;
  step.name = "check";
  auto model = load_model(context.model);
  if (!model) return step_error(step, model.error());
  CheckOptions options = context.options.check;
  options.frozen = frozen_shape_options_for_run_folder(context.out);
  auto result = check_model(*model, options);
  if (!result) return step_error(step, result.error());
  add_findings(context, result->findings);
  step.details = {{"checker", result->checker_passed ? "pass" : "fail"},
                  {"shape_inference", result->shape_inference_passed ? "pass" : "fail"},
                  {"nodes", result->summary.node_count},
                  {"operator_types", result->summary.operators.size()}};
  const bool passed = result->checker_passed && result->shape_inference_passed && !has_errors(result->findings);
  step.status = passed ? "pass" : "fail";
  return step;
}

// Simplifies the export into OUT/model.sim.onnx when that changes anything and the proof holds;
// the later steps then prove and audit the simplified model, the one meant to ship.
StepReport simplify_step(PipelineContext& context) {
  StepReport step;
  step.name = "simplify";
  auto reference = read_reference(context.out / "reference");
  const fs::path simplified = context.out / "model.sim.onnx";
  auto outcome = simplify_file(context.model, simplified, SimplifyOptions{}, reference ? &*reference : nullptr,
                               context.options.parity.tolerance, /*copy_when_unchanged=*/false);
  if (!outcome) return step_error(step, outcome.error());
  const auto& result = outcome->result;
  int before = 0;
  int after = 0;
  for (const auto& [op, n] : result.ops_before) before += n;
  for (const auto& [op, n] : result.ops_after) after += n;
  nlohmann::json passes = nlohmann::json::object();
  for (const auto& pass : result.passes) passes[pass.name] = pass.changes;
  step.details = {{"nodes_before", before},
                  {"nodes_after", after},
                  {"ops_before", result.ops_before},
                  {"ops_after", result.ops_after},
                  {"bytes_before", result.bytes_before},
                  {"bytes_after", result.bytes_after},
                  {"passes", passes},
                  {"rounds", result.rounds},
                  {"proof", {{"cases", outcome->proof.cases}, {"max_abs", outcome->proof.max_abs}}}};
  add_findings(context, outcome->proof.findings);
  if (!result.changed()) {
    step.status = "pass";
    step.reason = "nothing to simplify";
  } else if (!outcome->written) {
    step.status = "fail";
    step.reason = "the simplified model changed the outputs; the export is kept";
  } else {
    step.status = "pass";
    step.reason =
        fmt::format("{} -> {} nodes, proved on {} cases: model.sim.onnx", before, after, outcome->proof.cases);
    context.model = simplified;
  }
  return step;
}

StepReport ops_step(PipelineContext& context) {
  StepReport step;
  step.name = "ops";
  auto model = load_model(context.model);
  if (!model) return step_error(step, model.error());
  const OpsAudit audit = audit_operators(model->proto, context.options.targets);
  add_findings(context, audit.findings);
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& table : audit.tables) targets.push_back(table.target + ": " + table.runtime);
  step.details = {{"targets", targets}, {"operators", audit.operators.size()}};
  step.status = has_errors(audit.findings) ? "fail" : "pass";
  return step;
}

StepReport parity_step(PipelineContext& context) {
  StepReport step;
  step.name = "parity";
  auto reference = read_reference(context.out / "reference");
  if (!reference) return step_error(step, reference.error());
  ParityOptions options = context.options.parity;
  options.progress = &context.progress;
  auto result = run_parity(context.model, *reference, options);
  if (!result) return step_error(step, result.error());
  add_findings(context, result->findings);
  context.report.parity = parity_rows_to_json(*result);
  context.report.summary = parity_summary_to_json(*result);
  step.details = {{"cases", reference->cases.size()}, {"rows", result->rows.size()}};
  for (const auto& provider : result->providers) {
    if (!provider.ran) {
      step.status = "error";
      step.reason = fmt::format("provider {} could not run: {}", provider.provider, provider.reason);
    }
  }
  if (step.status != "error") step.status = result->passed() ? "pass" : "fail";
  context.parity = std::move(*result);
  return step;
}

// With a golden set from an earlier run: verify the new export against it (drift fails the
// run). Without one: freeze the proved outputs.
StepReport golden_step(PipelineContext& context) {
  StepReport step;
  step.name = "golden";
  const fs::path golden = context.out / "golden";
  const GoldenOptions options{context.options.parity, context.report.versions};
  if (fs::exists(golden / "manifest.json")) {
    GoldenOptions verify_options = options;
    verify_options.parity.compare_optimization_off = false;
    verify_options.parity.providers = {"cpu"};
    auto result = verify_golden(context.model, golden, verify_options);
    if (!result) {
      step.status = "error";
      step.reason = result.error().describe();
      return step;
    }
    add_findings(context, result->findings);
    step.details = {{"action", "verify"}, {"model_changed", result->model_changed}};
    step.status = result->passed() ? "pass" : "fail";
    return step;
  }
  if (!context.parity || !context.parity->passed()) {
    step.reason = "the parity proof did not pass: nothing to freeze";
    return step;
  }
  auto result = freeze_golden(context.model, context.out / "reference", golden, options, &*context.parity);
  if (!result) return step_error(step, result.error());
  step.details = {{"action", "freeze"}, {"data_sets", result->data_sets}};
  step.status = result->frozen ? "pass" : "fail";
  return step;
}

struct StepDefinition {
  std::string_view name;
  StepReport (*run)(PipelineContext&);
  bool needs_model;
};

// The pipeline, in order. Adding a step is adding a line here.
constexpr std::array k_steps = {
    StepDefinition{"export", export_step, false},    StepDefinition{"check", check_step, true},
    StepDefinition{"simplify", simplify_step, true}, StepDefinition{"ops", ops_step, true},
    StepDefinition{"parity", parity_step, true},     StepDefinition{"golden", golden_step, true},
};

bool any_code(const Report& report, std::initializer_list<std::string_view> codes, Severity severity) {
  for (const auto& f : report.findings) {
    for (const auto code : codes) {
      if (f.code == code && f.severity == severity) return true;
    }
  }
  return false;
}

const StepReport* find_step(const Report& report, std::string_view name) {
  for (const auto& step : report.steps) {
    if (step.name == name) return &step;
  }
  return nullptr;
}

// One finding per frozen axis: the static analysis (check), the differential trace (export) and
// the sweep (parity) may each see it; findings naming the same node merge, and a sweep failure at
// another size of the same axis confirms the static prediction.
void merge_frozen_dimension_evidence(Report& report) {
  std::vector<Finding> merged;
  std::map<std::string, std::size_t> by_where;
  for (auto& finding : report.findings) {
    if (finding.code != "FROZEN_DIMENSION" || finding.where.empty()) {
      merged.push_back(std::move(finding));
      continue;
    }
    const auto known = by_where.find(finding.where);
    if (known == by_where.end()) {
      by_where[finding.where] = merged.size();
      merged.push_back(std::move(finding));
      continue;
    }
    Finding& first = merged[known->second];
    first.message += " | " + finding.step + ": " + finding.message;
    if (finding.severity == Severity::error) first.severity = Severity::error;
  }
  for (auto& finding : merged) {
    if (finding.code != "FROZEN_DIMENSION") continue;
    const auto quote = finding.message.find("dynamic axis '");
    if (quote == std::string::npos) continue;
    const std::string label = finding.message.substr(quote + 14, finding.message.find('\'', quote + 14) - quote - 14);
    for (auto& other : merged) {
      if ((other.code == "SHAPE_REJECTED" || other.code == "PARITY_MISMATCH") &&
          other.message.find(label + "=") != std::string::npos) {
        finding.severity = Severity::error;
        finding.message += " | confirmed by the sweep: " + other.message;
        other.code.clear();  // folded into the frozen-dimension finding
        break;
      }
    }
  }
  std::erase_if(merged, [](const Finding& f) { return f.code.empty(); });
  report.findings = std::move(merged);
}

void answer_headline(Report& report) {
  const auto* check = find_step(report, "check");
  const auto* parity = find_step(report, "parity");
  const auto* golden = find_step(report, "golden");
  const auto ran = [](const StepReport* step) { return step && (step->status == "pass" || step->status == "fail"); };

  std::set<std::string> sizes;
  for (const auto& row : report.parity) {
    for (const auto& [label, size] : row["sizes"].items())
      sizes.insert(fmt::format("{}={}", label, size.get<int64_t>()));
  }
  std::string tested;
  for (const auto& s : sizes) tested += (tested.empty() ? "" : ", ") + s;
  const bool shapes_ok = !any_code(report, {"SHAPE_REJECTED", "FROZEN_DIMENSION", "RUN_FAILED"}, Severity::error);
  report.headline.push_back(
      {"Does the exported model accept every batch, sequence length and image size production sends?",
       !ran(parity) ? "not checked"
       : shapes_ok  ? "yes"
                    : "no",
       tested.empty() ? "no shape cases ran" : "ran " + tested});

  const bool aten = any_code(report, {"CUSTOM_DOMAIN_OP"}, Severity::error);
  report.headline.push_back(
      {"Did the checker and shape inference pass, with no aten operators left?",
       !ran(check)                        ? "not checked"
       : check->status == "pass" && !aten ? "yes"
                                          : "no",
       check && check->details.contains("checker")
           ? fmt::format("checker {}, shape inference {}{}", check->details["checker"].get<std::string>(),
                         check->details["shape_inference"].get<std::string>(), aten ? ", ATen fallback nodes left" : "")
           : (check ? check->reason : "")});

  const auto* ops = find_step(report, "ops");
  std::string targets;
  if (ops && ops->details.contains("targets")) {
    for (const auto& t : ops->details["targets"]) targets += (targets.empty() ? "" : "; ") + t.get<std::string>();
  }
  const bool restricted = any_code(report, {"OP_RESTRICTED_BY_TARGET"}, Severity::warning);
  report.headline.push_back({"Is every operator supported by each target runtime at this opset?",
                             !ran(ops)               ? "not checked"
                             : ops->status == "pass" ? "yes"
                                                     : "no",
                             targets.empty()
                                 ? (ops ? ops->reason : "")
                                 : targets + (restricted ? " (some with restrictions: see the warnings)" : "")});

  std::string providers;
  for (const auto& p : report.summary.value("providers", nlohmann::json::array())) {
    providers += fmt::format("{}{} {}", providers.empty() ? "" : ", ", p["provider"].get<std::string>(),
                             p["ran"].get<bool>() ? "ran" : "skipped");
  }
  const bool parity_ok = parity && parity->status == "pass";
  report.headline.push_back(
      {"Does ONNX Runtime match PyTorch within tolerance, on every provider tested, with no argmax flips?",
       !ran(parity) ? "not checked"
       : parity_ok  ? "yes"
                    : "no",
       fmt::format("{} comparisons; providers: {}", report.parity.size(), providers.empty() ? "none" : providers)});

  std::string golden_evidence = golden ? golden->reason : "";
  if (golden && golden->details.contains("action")) {
    golden_evidence = golden->details["action"] == "freeze"
                          ? fmt::format("frozen now: {} data sets in golden/", golden->details["data_sets"].get<int>())
                          : "verified the new export against the golden set of an earlier run";
  }
  report.headline.push_back({"Do the saved golden outputs still hold for the latest export?",
                             !ran(golden)               ? "not checked"
                             : golden->status == "pass" ? "yes"
                                                        : "no",
                             golden_evidence});
}

}  // namespace

Expected<Report> run_pipeline(const PipelineOptions& options, std::ostream& progress) {
  Report report;
  report.model = options.export_options.model;
  report.versions = tool_versions();
  PipelineContext context{options, options.export_options.out, progress, report, {}, std::nullopt, std::nullopt};
  for (const auto& definition : k_steps) {
    if (definition.needs_model && context.model.empty()) {
      StepReport skipped;
      skipped.name = definition.name;
      skipped.reason = "no model: the export did not produce one";
      report.steps.push_back(std::move(skipped));
      continue;
    }
    progress << "onnxproof pipeline: " << definition.name << '\n' << std::flush;
    const auto start = std::chrono::steady_clock::now();
    StepReport step = definition.run(context);
    step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.steps.push_back(std::move(step));
    if (context.usage_error) return std::unexpected(std::move(*context.usage_error));
  }
  report.onnx_model = context.model;
  merge_frozen_dimension_evidence(report);
  answer_headline(report);
  ONNXPROOF_TRY(write_report(report, options.export_options.out));
  return report;
}

}  // namespace onnxproof
