// What the pipeline concludes from its steps: findings merged by their evidence (a frozen axis
// seen three ways is one finding; the sweep confirms or contradicts it) and the headline's answers.
#include "run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "onnxproof/core/source_framework.h"

namespace onnxproof::pipeline_run {

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
    for (const auto& label : labels)
      evidence.push_back(fmt::format("'{}' = {}", label, fmt::join(swept.at(label), ", ")));
    finding.message += fmt::format(" | contradicted by the sweep: every case at {} ran and matched {}",
                                   fmt::join(evidence, "; "), source_title(report.framework));
  }
}

// A reference with no finite value (REFERENCE_NOT_FINITE) proves nothing: the parity rows' weak
// evidence on it (EVIDENCE_WEAK: outputs "within 0 of each other") says the same thing less
// plainly, so it goes; the one finding says what happened and what to do.
void drop_weak_evidence_without_a_finite_reference(std::vector<Finding>& findings) {
  if (!has_finding(findings, FindingCode::reference_not_finite, Severity::error)) return;
  std::erase_if(findings, [](const Finding& finding) { return finding.code == FindingCode::evidence_weak; });
}

namespace {

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
  if (has_finding(report.findings, FindingCode::reference_not_finite, Severity::error))
    return {question, "none",
            rows + "; " + source_title(report.framework) + "'s outputs hold no finite value (REFERENCE_NOT_FINITE)"};
  if (const auto domain = by_rule.find(rule_name(ToleranceRule::domain));
      compared && domain != by_rule.end() && domain->second == compared) {
    return {question, "weak",
            fmt::format("{}; every output is random (RANDOM_OUTPUT): checked by shape, dtype and domain, "
                        "no value was compared",
                        rows)};
  }
  if (!weak.empty()) {
    return {question, "weak",
            fmt::format("{}; outputs {} passed on evidence too weak to show a plausible bug (EVIDENCE_WEAK)", rows,
                        fmt::join(weak, ", "))};
  }
  return {question, compared ? "strong" : "none", rows};
}

// Which declared axes the sweep proved dynamic (two or more sizes compared) and which the model
// itself fixes (AXIS_FIXED_BY_MODEL): a user who declared too many axes reads it here.
std::string declared_axes_evidence(const Report& report) {
  std::set<std::string> fixed;
  for (const auto& finding : report.findings) {
    if (finding.code == FindingCode::axis_fixed_by_model && !finding.evidence.axis.empty())
      fixed.insert(finding.evidence.axis);
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

}  // namespace

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

// MISSION.md's five headline questions, answered from the steps' typed results, and the evidence.
// "cpu ran", "openvino ran in f32", "openvino:default ran in bf16 (advisory)": OpenVINO's rows say
// what it computed in; its default configuration's rows do not gate.
std::vector<std::string> providers_said(const Report& report) {
  std::vector<std::string> providers;
  if (!report.parity) return providers;
  for (const auto& p : report.parity->providers) {
    const std::string precision = p.precision.empty() ? "" : " in " + p.precision;
    providers.push_back(p.provider + (p.ran ? " ran" + precision : " skipped") + (p.advisory ? " (advisory)" : ""));
  }
  return providers;
}

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
       yes_no(parity, shapes_ok), shape_evidence});

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

  const std::vector<std::string> providers = providers_said(report);
  // Matching a reference with no finite value proves nothing; a parity failure or error is said as it is.
  const bool nothing_finite =
      passed(parity) && has_finding(findings, FindingCode::reference_not_finite, Severity::error);
  report.headline.push_back(
      {"Does ONNX Runtime match " + source_title(report.framework) +
           " within tolerance, on every provider tested, with no argmax flips?",
       nothing_finite ? "not checked" : yes_no(parity, passed(parity)),
       fmt::format("{} comparisons{}; providers: {}",
                   report.parity ? report.parity->rows.size() + report.parity->detections.size() : 0,
                   nothing_finite ? " of outputs with no finite value (REFERENCE_NOT_FINITE): nothing proved" : "",
                   providers.empty() ? "none" : fmt::format("{}", fmt::join(providers, ", ")))});

  // --target ort-cpu@VERSION, openvino@VERSION: the releases applications embed, each proved on its own.
  if (const auto* runtimes = find_step(report, "runtimes"))
    report.headline.push_back({"Does every runtime release named by --target load the model and match?",
                               yes_no(runtimes, passed(runtimes)), runtimes->reason});

  report.headline.push_back(evidence_answer(report, parity));

  const auto* golden = find_step(report, "golden");
  const bool golden_said =
      golden && (golden->status != StepStatus::error || run.kept_golden) && !run.golden_evidence.empty();
  const std::string not_asked = "no golden set asked for (pipeline --golden DIR, prove(golden=DIR))";
  report.headline.push_back(
      {"Do the saved golden outputs still hold for the latest export?", yes_no(golden, passed(golden)),
       golden_said ? run.golden_evidence
                   : (golden ? golden->reason : (run.golden_evidence.empty() ? not_asked : run.golden_evidence))});
}

}  // namespace onnxproof::pipeline_run
