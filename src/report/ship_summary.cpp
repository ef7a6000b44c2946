#include "onnxproof/report/ship_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/report.h"
#include "onnxproof/report/step_figures.h"

namespace onnxproof {
namespace {

// A cause and the symptoms it produces. The order is the order causes are tried: the first one
// a symptom follows from takes it. `axis`: only a symptom at a case whose sizes hold the cause's
// axis follows (a frozen batch explains failures at other batch sizes, not every failure).
struct CauseRule {
  FindingCode cause;
  std::vector<FindingCode> symptoms;
  bool axis = false;
  bool needs_where = false;  // a DIVERGENCE_LOCATED that named no module explains nothing
};

const std::vector<FindingCode> k_numeric = {FindingCode::parity_mismatch,     FindingCode::argmax_flip,
                                            FindingCode::nan_or_inf,          FindingCode::output_all_zeros,
                                            FindingCode::output_saturated,    FindingCode::golden_drift,
                                            FindingCode::generation_diverged, FindingCode::generation_logits_outside,
                                            FindingCode::encoder_mismatch,    FindingCode::generation_run_failed};

const std::vector<CauseRule>& cause_rules() {
  static const std::vector<CauseRule> rules = [] {
    std::vector<FindingCode> shapes = {FindingCode::shape_rejected, FindingCode::run_failed};
    shapes.insert(shapes.end(), k_numeric.begin(), k_numeric.end());
    return std::vector<CauseRule>{
        {FindingCode::file_weights_not_from_model, k_numeric},
        {FindingCode::frozen_dimension, shapes, true},
        {FindingCode::file_axis_fixed, shapes, true},
        {FindingCode::data_dependent_control_flow, k_numeric},
        {FindingCode::nondeterministic_forward, k_numeric},
        {FindingCode::training_mode, k_numeric},
        {FindingCode::runtime_optimization_changed_outputs, k_numeric},
        {FindingCode::divergence_located, k_numeric, false, true},
    };
  }();
  return rules;
}

const CauseRule* rule_for(const Finding& cause) {
  for (const auto& rule : cause_rules()) {
    if (rule.cause == cause.code) return &rule;
  }
  return nullptr;
}

bool is_symptom(const Finding& finding) {
  return std::any_of(cause_rules().begin(), cause_rules().end(), [&](const CauseRule& rule) {
    return std::find(rule.symptoms.begin(), rule.symptoms.end(), finding.code) != rule.symptoms.end();
  });
}

// Index of the cause `symptom` follows from among `findings`, trying causes in the rules' order.
std::optional<std::size_t> cause_of(const std::vector<Finding>& findings, const Finding& symptom) {
  for (const auto& rule : cause_rules()) {
    for (std::size_t i = 0; i < findings.size(); ++i) {
      if (findings[i].code == rule.cause && &findings[i] != &symptom && follows_from(symptom, findings[i])) return i;
    }
  }
  return std::nullopt;
}

int severity_rank(Severity s) { return s == Severity::error ? 0 : s == Severity::warning ? 1 : 2; }

// The main cause of a failure: the first group (errors first); a located divergence is an info
// finding but is the answer to "where" whenever it explains the error.
const FindingGroup* main_group(const std::vector<FindingGroup>& groups) {
  for (const auto& group : groups) {
    if (group.cause.severity == Severity::error || !group.follow_ons.empty()) return &group;
  }
  return nullptr;
}

std::string failure_answer(const Report& report, const FindingGroup* group) {
  if (report.verdict == Verdict::pass) {
    return "ship it: every required step ran and passed; ONNX Runtime matches " + source_title(report.framework) +
           " within tolerance at every case that ran";
  }
  if (report.verdict == Verdict::error) {
    const StepReport* step = first_error_step(report);
    // The export step's error is a reference whose own outputs are NaN or Inf: every step ran,
    // and what it compared proves nothing. Another step's error is said as it is.
    if ((!step || step->name == "export") &&
        has_finding(report.findings, FindingCode::reference_not_finite, Severity::error))
      return "not proved: " + source_title(report.framework) +
             "'s outputs hold no finite value on any case, so no comparison with them can prove the export "
             "(REFERENCE_NOT_FINITE)";
    return step ? fmt::format("not proved: the {} step could not run: {}", step->name, step->reason)
                : "not proved: a required step could not run";
  }
  if (!group) return "do not ship: a required check failed (see the findings)";
  const Finding& shown =
      group->cause.severity == Severity::error || group->follow_ons.empty() ? group->cause : group->follow_ons.front();
  // The registry's meaning, not the message: one sentence however much evidence was merged in.
  return fmt::format("do not ship: {} ({})", worded_for(finding_code_info(shown.code).meaning, report.framework),
                     shown.code_name());
}

}  // namespace

bool follows_from(const Finding& symptom, const Finding& cause) {
  const CauseRule* rule = rule_for(cause);
  if (!rule || std::find(rule->symptoms.begin(), rule->symptoms.end(), symptom.code) == rule->symptoms.end())
    return false;
  if (rule->needs_where && cause.where.empty()) return false;
  // An info finding is a suspicion the run contradicted (or a note): it explains nothing, except
  // the located divergence, which is info by registry and the answer to "where".
  if (cause.severity == Severity::info && cause.code != FindingCode::divergence_located) return false;
  if (rule->axis) return !cause.evidence.axis.empty() && symptom.evidence.sizes.contains(cause.evidence.axis);
  return true;
}

std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  std::vector<std::optional<std::size_t>> causes(findings.size());
  std::vector<bool> is_cause(findings.size(), false);
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (is_symptom(findings[i])) causes[i] = cause_of(findings, findings[i]);
    if (causes[i]) is_cause[*causes[i]] = true;
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (!causes[i]) order.push_back(i);
  }
  // Causes first (a located divergence is info by registry but explains errors), then by severity.
  const auto rank = [&](std::size_t i) { return is_cause[i] ? 0 : 1 + severity_rank(findings[i].severity); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  for (const std::size_t i : order) {
    FindingGroup group{.cause = findings[i]};
    for (std::size_t j = 0; j < findings.size(); ++j) {
      if (causes[j] == i) group.follow_ons.push_back(findings[j]);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

void point_follow_ons_at_causes(std::vector<Finding>& findings) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // symptom, cause
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (!is_symptom(findings[i])) continue;
    if (const auto cause = cause_of(findings, findings[i])) pairs.emplace_back(i, *cause);
  }
  for (const auto& [symptom, cause] : pairs) {
    const Finding& c = findings[cause];
    if (c.code == FindingCode::divergence_located) {  // not a defect to fix first: the place to look
      findings[symptom].hint = fmt::format("the error starts in {} (DIVERGENCE_LOCATED): {}", c.where, c.hint);
      continue;
    }
    findings[symptom].hint =
        fmt::format("follows from {}{}: fix that first ({})", c.code_name(), c.where.empty() ? "" : " at " + c.where,
                    c.hint.empty() ? "see that finding" : c.hint);
  }
}

namespace {

// The user's file:line a finding of `code` names (the tracer's warnings name the line of the
// model's code a size or a branch was frozen at), or "".
std::string user_source_line(const std::vector<Finding>& findings, FindingCode code) {
  if (code != FindingCode::frozen_dimension && code != FindingCode::data_dependent_control_flow) return "";
  for (const auto& finding : findings) {
    if (finding.code != code) continue;
    if (!finding.evidence.source.empty()) return finding.evidence.source;
    if (names_source_line(finding.where)) return finding.where;
  }
  return "";
}

// " with model.onnx.data" where the shipped simplified model refers to the export's weights file
// for the weights no rule changed (it is not whole without it); else "".
std::string shared_weights(const Report& report) {
  const StepReport* simplify = find_step(report, "simplify");
  const auto* figures = simplify ? simplify->result_as<SimplifyFigures>() : nullptr;
  if (!figures || figures->outcome.shared_data.empty() ||
      std::filesystem::path(report.onnx_model).filename() != "model.sim.onnx")
    return "";
  return fmt::format(" with {} (the weights it shares with model.onnx)", fmt::join(figures->outcome.shared_data, ", "));
}

// What a passing run says to do, from its own facts: the file it proved (each passing exporter's
// under --exporter both), the quantized copy it proved, and the golden set where one was frozen or
// verified (none after --no-golden or prove()'s default).
std::string ship_advice(const Report& report) {
  std::vector<std::string> files;
  for (const auto& exporter : report.exporters)
    if (exporter.verdict == Verdict::pass && !exporter.shipped_model.empty())
      files.push_back(exporter.run_folder + "/" + exporter.shipped_model);
  if (report.given_file)
    files.push_back(report.given_file->folder.empty() ? report.given_file->path + " (the file proved, as given)"
                                                      : report.given_file->folder + " (the folder proved, as given)");
  else if (report.exporters.empty() && !shipped_model_name(report).empty())
    files.push_back((std::filesystem::path(report.onnx_model).parent_path() / shipped_model_name(report)).string() +
                    shared_weights(report));
  std::string advice =
      "ship " + (files.empty() ? std::string("the proved model") : fmt::format("{}", fmt::join(files, " or ")));
  if (const StepReport* quantize = find_step(report, "quantize"); quantize && quantize->status == StepStatus::pass)
    advice += ", or " + (std::filesystem::path(report.onnx_model).parent_path() / "model.quant.onnx").string() +
              " (proved in quantization steps)";
  if (const StepReport* golden = find_step(report, "golden"); golden && golden->status == StepStatus::pass)
    advice += "; keep " + (report.golden_folder.empty() ? std::string("golden/") : report.golden_folder) +
              " and re-verify it on every re-export";
  return advice;
}

ShipSummary summarize_findings(const Report& report) {
  ShipSummary summary{.verdict = report.verdict};
  const auto groups = group_findings(report.findings);
  const FindingGroup* group = report.verdict == Verdict::fail ? main_group(groups) : nullptr;
  summary.answer = failure_answer(report, group);
  if (report.verdict == Verdict::error) {
    summary.what_to_do = "fix what stopped the step (the message says what and where), then run again";
    return summary;
  }
  if (!group) {
    if (report.verdict == Verdict::pass) summary.what_to_do = ship_advice(report);
    return summary;
  }
  summary.cause_code = std::string(group->cause.code_name());
  summary.where = group->cause.where;
  // A size or branch the trace froze is the user's line first, the graph node after it.
  if (const std::string line = user_source_line(report.findings, group->cause.code); !line.empty())
    summary.where =
        line + (summary.where.empty() || summary.where == line ? "" : " (in the graph: " + summary.where + ")");
  summary.what_to_do = group->cause.hint;
  // The located module answers "where" for a numeric failure whatever its cause; the whole model
  // (module "") says nothing a frozen node or a source line does not.
  if (report.localization && report.localization->located) {
    const ModuleComparison& m = report.localization->modules.at(*report.localization->located);
    const std::string module = m.source.empty() ? m.module : m.module + " (" + m.source + ")";
    if (group->cause.code == FindingCode::divergence_located)
      summary.where = "module " + (m.module.empty() ? "(the whole model)" + module : module);
    else if (!m.module.empty())
      summary.where += std::string(summary.where.empty() ? "" : "; ") + "the outputs first diverge in module " + module;
  }
  return summary;
}

}  // namespace

std::string shipped_file_name(const std::optional<std::string>& parity_model, const std::string& onnx_model) {
  return parity_model ? *parity_model : std::filesystem::path(onnx_model).filename().string();
}

std::string shipped_model_name(const Report& report) {
  const StepReport* parity = find_step(report, "parity");
  const auto* figures = parity ? parity->result_as<ParityFigures>() : nullptr;
  return shipped_file_name(figures && figures->float16 ? std::optional<std::string>(k_float16_model) : std::nullopt,
                           report.onnx_model.string());
}

ShipSummary summarize_for_shipping(const Report& report) {
  ShipSummary summary = summarize_findings(report);
  if (report.repair) summary.what_to_do = report.repair->what_to_do;
  return summary;
}

}  // namespace onnxproof
