#include "onnxproof/report/exporter_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <set>

#include "onnxproof/report/markdown.h"

namespace onnxproof {

nlohmann::json exporter_comparison_to_json(const std::vector<ExporterSummary>& summaries) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : summaries) {
    nlohmann::json errors = nlohmann::json::object();
    for (const auto& [output, error] : s.max_error)
      errors[output] = {{"max_abs", error.first}, {"max_rel", error.second}};
    rows.push_back({{"exporter", s.exporter},
                    {"run_folder", s.run_folder},
                    {"verdict", verdict_name(s.verdict)},
                    {"exported", s.exported},
                    {"opset", s.opset},
                    {"nodes", s.nodes},
                    {"initializers", s.initializers},
                    {"initializer_bytes", s.initializer_bytes},
                    {"export_seconds", s.export_seconds},
                    {"total_seconds", s.total_seconds},
                    {"max_error", errors},
                    {"error_codes", s.error_codes},
                    {"warnings", s.warnings}});
  }
  return rows;
}

namespace {

// The table as cells: a label and one cell per exporter, row by row (the writers add the headers).
std::vector<std::vector<std::string>> comparison_rows(const std::vector<ExporterSummary>& summaries) {
  std::vector<std::vector<std::string>> rows;
  const auto add = [&](const std::string& label, const std::function<std::string(const ExporterSummary&)>& cell) {
    std::vector<std::string> cells = {label};
    for (const auto& s : summaries) cells.push_back(cell(s));
    rows.push_back(std::move(cells));
  };
  add("verdict", [](const auto& s) { return std::string(verdict_name(s.verdict)); });
  add("exported", [](const auto& s) { return std::string(s.exported ? "yes" : "no"); });
  add("opset", [](const auto& s) { return s.exported ? std::to_string(s.opset) : "-"; });
  add("nodes", [](const auto& s) { return s.exported ? std::to_string(s.nodes) : "-"; });
  add("initializers", [](const auto& s) {
    return s.exported ? fmt::format("{} ({:.1f} MB)", s.initializers, s.initializer_bytes / 1e6) : "-";
  });
  add("export seconds", [](const auto& s) { return fmt::format("{:.1f}", s.export_seconds); });
  add("all steps, seconds", [](const auto& s) { return fmt::format("{:.1f}", s.total_seconds); });
  std::set<std::string> outputs;
  for (const auto& s : summaries)
    for (const auto& [output, error] : s.max_error) outputs.insert(output);
  for (const auto& output : outputs) {
    add(fmt::format("max abs / rel error, {}", output), [&](const auto& s) {
      const auto found = s.max_error.find(output);
      return found == s.max_error.end() ? std::string("-")
                                        : fmt::format("{:.3g} / {:.3g}", found->second.first, found->second.second);
    });
  }
  add("error findings", [](const auto& s) {
    return s.error_codes.empty() ? std::string("none") : fmt::format("{}", fmt::join(s.error_codes, ", "));
  });
  add("warnings", [](const auto& s) { return std::to_string(s.warnings); });
  return rows;
}

}  // namespace

std::string exporter_comparison_to_markdown(const std::vector<ExporterSummary>& summaries) {
  const auto rows = comparison_rows(summaries);
  std::vector<std::string> heads, rules;
  for (const auto& s : summaries) {
    // The run folder is ours (the exporter's name); the label is escaped all the same.
    heads.push_back(fmt::format("[{}]({}/report.md)", markdown_text(s.run_folder), s.run_folder));
    rules.push_back("---:");
  }
  std::string md = fmt::format("## Exporters side by side\n\n| | {} |\n| --- | {} |\n", fmt::join(heads, " | "),
                               fmt::join(rules, " | "));
  for (const auto& row : rows) {
    std::vector<std::string> cells;
    for (const auto& cell : row) cells.push_back(markdown_text(cell));  // output names are the model's
    md += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  return md;
}

std::string exporter_comparison_to_html(const std::vector<ExporterSummary>& summaries,
                                        const std::function<std::string(const std::string&)>& escape) {
  const auto rows = comparison_rows(summaries);
  std::string html = "<h2>Exporters side by side</h2>\n<table><tr><th></th>";
  for (const auto& s : summaries)
    html += fmt::format("<th><a href=\"{0}/report.html\">{1}</a></th>", escape(s.run_folder), escape(s.exporter));
  html += "</tr>\n";
  for (const auto& row : rows) {
    html += "<tr>";
    for (const auto& cell : row) html += fmt::format("<td>{}</td>", escape(cell));
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace onnxproof
