#include "onnxproof/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/parity_plot.h"

namespace onnxproof {

std::string Report::verdict() const {
  bool failed = has_errors(findings);
  for (const auto& step : steps) {
    if (step.status == "error") return "error";
    if (step.status != "pass") failed = true;
  }
  return failed || steps.empty() ? "fail" : "pass";
}

nlohmann::json report_to_json(const Report& report) {
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [tool, version] : report.versions) versions[tool] = version;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : report.steps) {
    nlohmann::json entry = {{"name", step.name}, {"status", step.status}, {"seconds", step.seconds}};
    if (!step.reason.empty()) entry["reason"] = step.reason;
    entry.update(step.details);
    steps.push_back(std::move(entry));
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : report.findings) findings.push_back(finding_to_json(finding));
  nlohmann::json headline = nlohmann::json::array();
  for (const auto& answer : report.headline) {
    headline.push_back({{"question", answer.question}, {"answer", answer.answer}, {"evidence", answer.evidence}});
  }
  return {{"schema", "onnxproof.report/1"},
          {"verdict", report.verdict()},
          {"model", report.model},
          {"onnx_model", report.onnx_model.string()},
          {"versions", versions},
          {"headline", headline},
          {"steps", steps},
          {"findings", findings},
          {"summary", report.summary},
          {"parity", report.parity}};
}

std::string report_to_markdown(const Report& report) {
  std::string md = fmt::format("# onnxproof report: {}\n\n**Verdict: {}**\n\n", report.model, report.verdict());
  if (!report.onnx_model.empty()) md += fmt::format("Model: `{}`\n\n", report.onnx_model.string());
  md += "## Can I ship?\n\n| question | answer | evidence |\n| --- | --- | --- |\n";
  for (const auto& a : report.headline) md += fmt::format("| {} | **{}** | {} |\n", a.question, a.answer, a.evidence);

  md += "\n## Findings\n\n";
  if (report.findings.empty()) md += "None.\n";
  for (const Severity severity : {Severity::error, Severity::warning, Severity::info}) {
    for (const auto& f : report.findings) {
      if (f.severity != severity) continue;
      md += fmt::format("- **{}** `{}` ({}): {}", severity_name(f.severity), f.code, f.step, f.message);
      if (!f.where.empty()) md += fmt::format("  \n  where: `{}`", f.where);
      if (!f.hint.empty()) md += fmt::format("  \n  hint: {}", f.hint);
      md += "\n";
    }
  }

  md += "\n## Steps\n\n| step | status | seconds | note |\n| --- | --- | ---: | --- |\n";
  for (const auto& step : report.steps) {
    md += fmt::format("| {} | {} | {:.2f} | {} |\n", step.name, step.status, step.seconds, step.reason);
  }

  if (!report.parity.empty()) {
    md += "\n## Parity (ONNX Runtime against PyTorch)\n\n![largest error per case](report-parity.svg)\n\n"
          "| case | sizes | provider | graph opt | output | status | max abs | max rel | mismatches | argmax flips |\n"
          "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
    for (const auto& row : report.parity) {
      std::string sizes;
      for (const auto& [label, size] : row["sizes"].items()) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ", ", label, size.get<int64_t>());
      if (row.contains("max_abs")) {
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3g} | {:.3g} | {} / {} | {} |\n", row["case"].get<std::string>(), sizes,
                          row["provider"].get<std::string>(), row["optimization"].get<std::string>(),
                          row["output"].get<std::string>(), row["status"].get<std::string>(), row["max_abs"].get<double>(),
                          row["max_rel"].get<double>(), row["mismatches"].get<int64_t>(), row["elements"].get<int64_t>(),
                          row["argmax_flips"].is_null() ? "-" : std::to_string(row["argmax_flips"].get<int64_t>()));
      } else {
        md += fmt::format("| {} | {} | {} | {} | {} | {} | | | | {} |\n", row["case"].get<std::string>(), sizes,
                          row["provider"].get<std::string>(), row["optimization"].get<std::string>(),
                          row.value("output", ""), row["status"].get<std::string>(), row.value("note", ""));
      }
    }
  }
  md += "\n## Versions\n\n";
  for (const auto& [tool, version] : report.versions) md += fmt::format("- {}: {}\n", tool, version);
  return md;
}

Expected<void> write_report(const Report& report, const std::filesystem::path& out) {
  ONNXPROOF_TRY(write_file_atomically(out / "report.json", report_to_json(report).dump(2) + "\n"));
  if (const std::string svg = parity_plot_svg(report.parity); !svg.empty()) {
    ONNXPROOF_TRY(write_file_atomically(out / "report-parity.svg", svg));
  }
  return write_file_atomically(out / "report.md", report_to_markdown(report));
}

}  // namespace onnxproof
