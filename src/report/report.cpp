#include "onnxproof/report/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/check_report.h"
#include "onnxproof/report/detection_report.h"
#include "onnxproof/report/localize_report.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"
#include "onnxproof/report/parity_plot.h"
#include "onnxproof/report/parity_report.h"
#include "onnxproof/report/quantization_report.h"
#include "onnxproof/report/report_sections.h"

namespace onnxproof {

void finish_report(Report& report) {
  std::vector<StepStatus> statuses;
  for (const auto& step : report.steps) statuses.push_back(step.status);
  report.verdict = verdict_from(statuses, report.findings);
}

namespace {

// One row of the parity table, as the Markdown and HTML writers show it: case, sizes, provider,
// graph optimization, output, status, rule, max abs, max rel, the error against exact and what the
// rule allowed, their ratio, mismatches, argmax flips, and a note (why a case did not run).
std::vector<std::string> parity_cells(const ParityRow& row) {
  std::string sizes;
  for (const auto& [label, size] : row.sizes) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ", ", label, size);
  std::vector<std::string> cells = {row.data_set, sizes,
                                    row.provider, std::string(optimization_name(row.optimization)),
                                    row.output,   std::string(row_status_name(row.status))};
  if (!row.compared()) {
    cells.insert(cells.end(), {"", "", "", "", "", "", "", "", row.note});
    return cells;
  }
  const auto& cmp = row.comparison;
  const auto ratio = row.exact ? row.exact->ratio() : std::nullopt;
  cells.insert(cells.end(),
               {rule_name(row.rule), fmt::format("{:.3g}", cmp.max_abs), fmt::format("{:.3g}", cmp.max_rel),
                row.exact ? fmt::format("{:.3g} / {:.3g}", row.exact->onnx, row.exact->pytorch) : "-",
                row.exact ? fmt::format("{:.3g}", row.exact->budget)
                          : fmt::format("rtol {:.3g}, atol {:.3g}", row.tolerance.rtol, row.tolerance.atol),
                ratio ? fmt::format("{:.3g}x", *ratio) : "-", fmt::format("{} / {}", cmp.mismatches, cmp.elements),
                row.argmax ? std::to_string(row.argmax->flips) : "-", ""});
  return cells;
}

// The sections of the steps' results placed at `place`, in step order (step_result.h).
std::string step_sections(const Report& report, SectionPlace place,
                          std::string (StepResult::*section)(const Report&) const) {
  std::string text;
  for (const auto& step : report.steps)
    if (step.result && step.result->place() == place) text += ((*step.result).*section)(report);
  return text;
}

const std::vector<ParityRow>& parity_rows(const Report& report) {
  static const std::vector<ParityRow> none;
  return report.parity ? report.parity->rows : none;
}

}  // namespace

void print_report_summary(std::ostream& out, const Report& report, const std::filesystem::path& out_dir,
                          const std::string& after_answer) {
  print_ship_summary(out, report);  // the answer first; the detail behind it follows
  out << after_answer;
  for (const auto& step : report.steps) {
    out << fmt::format("step {:<11} {:<5} {:>7.2f} s  {}\n", step.name, status_name(step.status), step.seconds,
                       step.reason);
  }
  for (const auto& answer : report.headline) {
    out << fmt::format("{:<12} {}\n             {}\n", answer.answer, answer.question, answer.evidence);
  }
  if (report.parity) print_detection_summary(out, *report.parity);
  print_grouped_findings(out, report);
  out << fmt::format("report           {}\n", (out_dir / "report.md").string());
  out << fmt::format("verdict          {}\n", verdict_name(report.verdict));
}

const StepReport* find_step(const Report& report, std::string_view name) {
  const auto it = std::find_if(report.steps.begin(), report.steps.end(), [&](const auto& s) { return s.name == name; });
  return it == report.steps.end() ? nullptr : &*it;
}

const StepReport* first_error_step(const Report& report) {
  for (const auto& step : report.steps) {
    if (step.status == StepStatus::error) return &step;
  }
  return nullptr;
}

nlohmann::json report_to_json(const Report& report) {
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [tool, version] : report.versions) versions[tool] = version;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : report.steps) {
    nlohmann::json entry = {{"name", step.name}, {"status", status_name(step.status)}, {"seconds", step.seconds}};
    if (step.peak_mib) entry["peak_mib"] = std::round(*step.peak_mib);
    if (!step.reason.empty()) entry["reason"] = step.reason;
    if (step.result) entry.update(step.result->to_json());
    steps.push_back(std::move(entry));
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : report.findings) findings.push_back(finding_to_json(finding));
  nlohmann::json headline = nlohmann::json::array();
  for (const auto& answer : report.headline) {
    headline.push_back({{"question", answer.question}, {"answer", answer.answer}, {"evidence", answer.evidence}});
  }
  nlohmann::json json = {
      {"schema", "onnxproof.report/2"},
      {"verdict", verdict_name(report.verdict)},
      {"model", report.model},
      {"onnx_model", report.onnx_model.string()},
      {"versions", versions},
      {"headline", headline},
      {"steps", steps},
      {"findings", findings},
      {"summary", report.parity ? parity_summary_to_json(*report.parity) : nlohmann::json::object()},
      {"parity", report.parity ? parity_rows_to_json(*report.parity) : nlohmann::json::array()},
      {"detections", report.parity ? detection_rows_to_json(*report.parity) : nlohmann::json::array()},
      {"exporter_report", report.exporter_report.string()},
      {"exporters", exporter_comparison_to_json(report.exporters)},
      {"localization", report.localization                 ? localization_to_json(*report.localization)
                       : report.localization_error.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json{{"error", report.localization_error}}},
      {"ship", ship_summary_to_json(report)}};
  if (report.signature) json["signature"] = signature_to_json(report);
  if (!report.framework.empty()) json["framework"] = report.framework;
  if (report.given_file) json["given_file"] = given_file_to_json(*report.given_file);
  return json;
}

// Every name and message below is the model's or its author's: markdown_text / markdown_code make
// them render as characters (no heading, tag or table cell of their own).
std::string report_to_markdown(const Report& report) {
  std::string md = fmt::format("# onnxproof report: {}\n\n**Verdict: {}**\n\n", markdown_text(report.model),
                               verdict_name(report.verdict));
  md += ship_summary_to_markdown(report);
  const std::string source = source_title(report.framework);
  if (!report.framework.empty()) md += fmt::format("Source framework: {}\n\n", markdown_text(source));
  if (!report.onnx_model.empty()) md += fmt::format("Model: {}\n\n", markdown_code(report.onnx_model.string()));
  if (!report.exporter_report.empty())  // always exporter_report.md, beside report.md
    md += fmt::format("The exporter's own report: [{}]({})\n\n", markdown_text(report.exporter_report.string()),
                      report.exporter_report.string());
  if (!report.exporters.empty()) md += exporter_comparison_to_markdown(report.exporters) + "\n";
  md += signature_to_markdown(report);
  if (!report.headline.empty()) {  // --exporter both answers them in each exporter's report
    md += "## Can I ship?\n\n| question | answer | evidence |\n| --- | --- | --- |\n";
    for (const auto& a : report.headline) {
      md += fmt::format("| {} | **{}** | {} |\n", markdown_text(a.question), markdown_text(a.answer),
                        markdown_text(a.evidence));
    }
  }

  md += findings_to_markdown(report);

  md += "\n## Steps\n\n| step | status | seconds | note |\n| --- | --- | ---: | --- |\n";
  for (const auto& step : report.steps) {
    md += fmt::format("| {} | {} | {:.2f} | {} |\n", markdown_text(step.name), status_name(step.status), step.seconds,
                      markdown_text(step.reason));
  }
  md += step_sections(report, SectionPlace::after_steps, &StepResult::markdown);

  if (!parity_rows(report).empty()) {
    md += "\n## Parity (ONNX Runtime against " + markdown_text(source) +
          ")\n\n![largest error per case](report-parity.svg)\n\nThe rule: " + rule_sentence(report.framework) +
          "\n\n| case | sizes | provider | graph opt | output | status | rule | max abs | max rel | "
          "error vs exact (ONNX / " +
          markdown_text(source) + ") | allowed | ONNX / " + markdown_text(source) +
          " | mismatches | argmax flips | note |\n"
          "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    for (const auto& row : parity_rows(report)) {
      std::vector<std::string> cells;
      for (const auto& cell : parity_cells(row)) cells.push_back(markdown_text(cell));
      md += fmt::format("| {} |\n", fmt::join(cells, " | "));
    }
  }
  md += quantization_to_markdown(report);
  md += step_sections(report, SectionPlace::after_parity, &StepResult::markdown);
  if (report.parity) md += detections_to_markdown(*report.parity);
  if (report.localization) md += localization_to_markdown(*report.localization);
  if (!report.localization_error.empty())
    md += "\n## Where the outputs diverge\n\nNot localized: " + markdown_text(report.localization_error) + "\n";
  md += "\n## Versions\n\n";
  for (const auto& [tool, version] : report.versions)
    md += fmt::format("- {}: {}\n", markdown_text(tool), markdown_text(version));
  return md;
}

std::string report_to_html(const Report& report) {
  const std::string_view verdict = verdict_name(report.verdict);
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>onnxproof: {0}</title>\n"
      "<style>{2}</style></head><body>\n<h1>onnxproof report: {0}</h1>\n<p>Verdict: <span "
      "class=\"{1}\">{1}</span></p>\n",
      markup_escape(report.model), verdict, k_report_css);
  html += ship_summary_to_html(report);
  if (!report.framework.empty())
    html += fmt::format("<p>Source framework: {}</p>\n", markup_escape(source_title(report.framework)));
  if (!report.onnx_model.empty())
    html += fmt::format("<p>Model: <code>{}</code></p>\n", markup_escape(report.onnx_model.string()));
  if (!report.exporter_report.empty()) {
    html += fmt::format("<p>The exporter's own report: <a href=\"{0}\">{0}</a></p>\n",
                        markup_escape(report.exporter_report.string()));
  }
  if (!report.exporters.empty()) html += exporter_comparison_to_html(report.exporters, markup_escape);
  html += signature_to_html(report);
  html += "<h2>Can I ship?</h2>\n<table><tr><th>question</th><th>answer</th><th>evidence</th></tr>\n";
  for (const auto& a : report.headline) {
    const std::string css = a.answer == "yes" ? "yes" : a.answer == "no" ? "no" : "skip";
    html += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>\n", markup_escape(a.question), css,
                        markup_escape(a.answer), markup_escape(a.evidence));
  }
  html += "</table>\n" + findings_to_html(report);
  html += "<h2>Steps</h2>\n<table><tr><th>step</th><th>status</th><th>seconds</th><th>note</th></tr>\n";
  for (const auto& step : report.steps) {
    html += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{:.2f}</td><td>{}</td></tr>\n",
                        markup_escape(step.name), status_name(step.status), status_name(step.status), step.seconds,
                        markup_escape(step.reason));
  }
  html += "</table>\n";
  html += step_sections(report, SectionPlace::after_steps, &StepResult::html);
  if (const std::string svg = parity_plot_svg(parity_rows(report)); !svg.empty()) {
    const std::string source = markup_escape(source_title(report.framework));
    html += "<h2>Parity (ONNX Runtime against " + source +
            ")</h2>\n<p>The rule: " + markup_escape(rule_sentence(report.framework)) + "</p>\n" + svg;
    html +=
        "<table><tr><th>case</th><th>sizes</th><th>provider</th><th>graph opt</th><th>output</th><th>status</th>"
        "<th>rule</th><th>max abs</th><th>max rel</th><th>error vs exact (ONNX / " +
        source +
        ")</th><th>allowed</th>"
        "<th>ONNX / " +
        source + "</th><th>mismatches</th><th>argmax flips</th><th>note</th></tr>\n";
    for (const auto& row : parity_rows(report)) {
      html += "<tr>";
      const auto cells = parity_cells(row);
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string css =
            i == 5 ? fmt::format(" class=\"{}\"", row.compared() ? row_status_name(row.status) : "fail") : "";
        html += fmt::format("<td{}>{}</td>", css, markup_escape(cells[i]));
      }
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  html += quantization_to_html(report);
  html += step_sections(report, SectionPlace::after_parity, &StepResult::html);
  if (report.parity) html += detections_to_html(*report.parity);
  if (report.localization) html += localization_to_html(*report.localization);
  if (!report.localization_error.empty())
    html +=
        "<h2>Where the outputs diverge</h2>\n<p>Not localized: " + markup_escape(report.localization_error) + "</p>\n";
  html += "<h2>Versions</h2>\n<ul>\n";
  for (const auto& [tool, version] : report.versions)
    html += fmt::format("<li>{}: {}</li>\n", tool, markup_escape(version));
  html += "</ul>\n</body></html>\n";
  return html;
}

Expected<void> write_report(const Report& report, const std::filesystem::path& out) {
  ONNXPROOF_TRY(write_file_atomically(out / "report.html", report_to_html(report)));
  ONNXPROOF_TRY(write_file_atomically(
      out / "report.json",
      report_to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  if (const std::string svg = parity_plot_svg(parity_rows(report)); !svg.empty()) {
    ONNXPROOF_TRY(write_file_atomically(out / "report-parity.svg", svg));
  }
  for (const auto& step : report.steps) {
    if (!step.result) continue;
    for (const auto& file : step.result->files(report))
      ONNXPROOF_TRY(write_file_atomically(out / file.name, file.content));
  }
  if (report.localization) {
    if (const std::string svg = localization_plot_svg(*report.localization); !svg.empty())
      ONNXPROOF_TRY(write_file_atomically(out / "report-localize.svg", svg));
  }
  return write_file_atomically(out / "report.md", report_to_markdown(report));
}

}  // namespace onnxproof
