// The command line's summaries, from the outcomes alone: what each command printed before the
// workflows moved into the library, line for line.
#include "onnxproof/workflow/present.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/ops_report.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/simplify_report.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

namespace {

void print_verdict(std::ostream& out, Verdict verdict) {
  out << fmt::format("verdict          {}\n", verdict_name(verdict));
}

// The end of most summaries: the findings, then the verdict line.
template <typename Result>
void print_findings_and_verdict(std::ostream& out, const Outcome<Result>& outcome) {
  print_findings(out, outcome.findings);
  print_verdict(out, outcome.verdict);
}

}  // namespace

void print_outcome(std::ostream& out, const Outcome<VersionsResult>& outcome) {
  const auto& versions = outcome.result;
  for (const auto& [tool, version] : versions.engine) out << fmt::format("{:<18} {}\n", tool, version);
  out << fmt::format("{:<18} {}\n", "data files", versions.data_dir.string());
  out << fmt::format("{:<18} {}\n", "front end", versions.python_dir.string());
  // Each framework's tools by their names; a name already listed gets "(python)" in the first
  // framework's rows (its onnx beside the engine's), the framework's name in a later one's.
  std::set<std::string> shown;
  for (const auto& [tool, version] : versions.engine) shown.insert(tool);
  bool first = true;
  for (const auto& [framework, front_end] : versions.front_ends) {
    const auto label = [&](const std::string& tool) {
      const std::string name = shown.contains(tool) ? tool + " (" + (first ? "python" : framework) + ")" : tool;
      shown.insert(tool);
      return name;
    };
    if (!front_end) {
      out << fmt::format("{:<18} {}\n", label("python"), "not available: " + front_end.error().describe());
      first = false;
      continue;
    }
    for (const auto& [tool, version] : *front_end) out << fmt::format("{:<18} {}\n", label(tool), version);
    first = false;
  }
}

void print_outcome(std::ostream& out, const Outcome<CheckedModel>& outcome) {
  print_check_result(out, outcome.result.model, outcome.result.check);
}

void print_outcome(std::ostream& out, const Outcome<std::vector<WrittenOutput>>& outcome) {
  for (const auto& output : outcome.result) {
    out << fmt::format("{:<24} {:<8} {:<16} -> {}\n", output.name, dtype_name(output.dtype), format_shape(output.shape),
                       output.file.string());
  }
}

void print_outcome(std::ostream& out, const Outcome<OpsAudit>& outcome) {
  print_ops_audit(out, outcome.result);
  print_findings_and_verdict(out, outcome);
}

void print_outcome(std::ostream& out, const Outcome<OpsetLimit>& outcome) {
  const OpsetLimit& limit = outcome.result;
  // What the loaded ONNX Runtime itself loads: a proof per runtime release reads it of each one.
  const nlohmann::json onnxruntime = {{"version", onnxruntime_version()},
                                      {"newest_opset", onnxruntime_newest_opset()},
                                      {"newest_ir_version", onnxruntime_newest_ir_version()}};
  out << nlohmann::json{{"opset", limit.opset},
                        {"reason", limit.reason},
                        {"op_limits", limit.op_limits},
                        {"portable", limit.portable},
                        {"portable_reason", limit.portable_reason},
                        {"onnxruntime", onnxruntime}}
             .dump()
      << '\n';
}

void print_outcome(std::ostream& out, const Outcome<ProbeReport>& outcome) {
  const ProbeReport& probe = outcome.result;
  print_probe_result(out, probe.rows, probe.differences, probe.provider);
  if (!outcome.artifacts.empty())
    out << fmt::format("table            {} ({} rows)\n", outcome.artifacts.front().string(), probe.table_rows);
}

void print_outcome(std::ostream& out, const Outcome<SimplifiedModel>& outcome) {
  print_simplify_outcome(out, outcome.result.simplify, outcome.result.output);
  out << fmt::format("verdict          {}{}\n", verdict_name(outcome.verdict),
                     outcome.result.simplify.written ? "" : " (the simplified model was not written)");
}

void print_outcome(std::ostream& out, const Outcome<ParityResult>& outcome) {
  print_parity_result(out, outcome.result);
  print_findings_and_verdict(out, outcome);
}

void print_outcome(std::ostream& out, const Outcome<FreezeResult>& outcome) {
  const FreezeResult& freeze = outcome.result;
  print_parity_result(out, freeze.parity);
  print_findings(out, outcome.findings);
  if (freeze.frozen) {
    out << fmt::format("golden           {} data sets frozen in {}\n", freeze.data_sets,
                       outcome.artifacts.front().string());
  } else {
    out << "golden           nothing frozen: the parity proof failed\n";
  }
  print_verdict(out, outcome.verdict);
}

void print_outcome(std::ostream& out, const Outcome<VerifyResult>& outcome) {
  print_parity_result(out, outcome.result.parity);
  print_findings_and_verdict(out, outcome);
}

void print_outcome(std::ostream& out, const Outcome<ExportResult>& outcome) {
  const ExportResult& exported = outcome.result;
  if (exported.model.empty()) {
    out << "exported         nothing: the export failed\n";
  } else {
    out << fmt::format("exported         {} ({} exporter, sha256 {})\n", exported.model.string(), exported.exporter,
                       exported.sha256.substr(0, 16));
    out << fmt::format("reference        {} data sets in {}\n", exported.reference_sets,
                       outcome.artifacts.back().string());
  }
  print_findings_and_verdict(out, outcome);
}

void print_outcome(std::ostream& out, const Outcome<Report>& outcome) {
  print_report_summary(out, outcome.result, outcome.artifacts.front());
}

void print_outcome(std::ostream& out, const Outcome<DemoRun>& outcome) {
  const Report& report = outcome.result.report;
  std::string accuracy_lines;
  for (auto accuracy : report.parity ? report.parity->accuracy : std::vector<TaskAccuracy>{}) {
    accuracy_lines +=
        fmt::format("accuracy         {} {:.1f}%, ONNX Runtime {:.1f}% on {} held-out digits; {} predictions flipped\n",
                    source_title(report.framework), 100.0 * accuracy.accuracy["source"],
                    100.0 * accuracy.accuracy["cpu"], accuracy.samples, accuracy.flipped);
  }
  print_report_summary(out, report, outcome.artifacts.front(), accuracy_lines);
}

void print_outcome(std::ostream& out, const Outcome<LocalizedRun>& outcome) {
  print_findings(out, outcome.findings);
  out << fmt::format("localization     {}\n", outcome.result.markdown.string());
}

void print_outcome(std::ostream& out, const Outcome<BisectedRun>& outcome) {
  const auto& bisection = outcome.result.result.bisection;
  for (const auto& release : bisection.releases)
    out << fmt::format("{:<16} {}{}\n", release.version, release.outcome.empty() ? "not proved" : release.outcome,
                       release.recorded ? " (recorded by the run)" : "");
  print_findings(out, outcome.findings);
  out << fmt::format("bisection        {}\n", outcome.result.markdown.string());
}

void print_outcome(std::ostream& out, const Outcome<RepairedRun>& outcome) {
  const RepairResult& result = outcome.result.result;
  for (const auto& attempt : result.attempts) {
    out << fmt::format("{:<16} {}{}\n", attempt.status == "not_tried" ? "not tried" : attempt.status,
                       attempt.candidate.change, attempt.why.empty() ? "" : " (" + attempt.why + ")");
  }
  if (result.repaired) {
    const auto& repaired = result.attempts[*result.repaired];
    out << fmt::format("repaired         {} -> {}\n", repaired.candidate.change, repaired.folder.string());
  } else {
    // Only what ran counts as tried: a budget spent before a change leaves it "not tried".
    const auto tried = std::count_if(result.attempts.begin(), result.attempts.end(),
                                     [](const auto& attempt) { return attempt.status != "not_tried"; });
    out << fmt::format("not repaired     {} of {} change(s) tried in {:.1f} s{}\n", tried, result.attempts.size(),
                       result.seconds, result.budget_spent ? "; the budget ran out" : "");
  }
  out << fmt::format("repair           {}\n", outcome.result.markdown.string());
  print_verdict(out, outcome.verdict);
}

}  // namespace onnxproof
