#include "onnxproof/report/exporter_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <set>

namespace onnxproof {

nlohmann::json exporter_comparison_to_json(const std::vector<ExporterSummary>& summaries) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : summaries) {
    nlohmann::json errors = nlohmann::json::object();
    for (const auto& [output, error] : s.max_error) errors[output] = {{"max_abs", error.first}, {"max_rel", error.second}};
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

// One table row: a label and one cell per exporter.
std::string row(const std::string& label, const std::vector<ExporterSummary>& summaries,
                const std::function<std::string(const ExporterSummary&)>& cell) {
  std::vector<std::string> cells;
  for (const auto& s : summaries) cells.push_back(cell(s));
  return fmt::format("| {} | {} |\n", label, fmt::join(cells, " | "));
}

}  // namespace

std::string exporter_comparison_to_markdown(const std::vector<ExporterSummary>& summaries) {
  std::string md = "## Exporters side by side\n\n| | ";
  std::vector<std::string> heads, rules;
  for (const auto& s : summaries) {
    heads.push_back(fmt::format("[{0}]({0}/report.md)", s.run_folder));
    rules.push_back("---:");
  }
  md += fmt::format("{} |\n| --- | {} |\n", fmt::join(heads, " | "), fmt::join(rules, " | "));
  md += row("verdict", summaries, [](const auto& s) { return fmt::format("**{}**", verdict_name(s.verdict)); });
  md += row("exported", summaries, [](const auto& s) { return std::string(s.exported ? "yes" : "no"); });
  md += row("opset", summaries, [](const auto& s) { return s.exported ? std::to_string(s.opset) : "-"; });
  md += row("nodes", summaries, [](const auto& s) { return s.exported ? std::to_string(s.nodes) : "-"; });
  md += row("initializers", summaries, [](const auto& s) {
    return s.exported ? fmt::format("{} ({:.1f} MB)", s.initializers, s.initializer_bytes / 1e6) : "-";
  });
  md += row("export seconds", summaries, [](const auto& s) { return fmt::format("{:.1f}", s.export_seconds); });
  md += row("all steps, seconds", summaries, [](const auto& s) { return fmt::format("{:.1f}", s.total_seconds); });
  std::set<std::string> outputs;
  for (const auto& s : summaries)
    for (const auto& [output, error] : s.max_error) outputs.insert(output);
  for (const auto& output : outputs) {
    md += row(fmt::format("max abs / rel error, `{}`", output), summaries, [&](const auto& s) {
      const auto found = s.max_error.find(output);
      return found == s.max_error.end() ? std::string("-")
                                        : fmt::format("{:.3g} / {:.3g}", found->second.first, found->second.second);
    });
  }
  md += row("error findings", summaries, [](const auto& s) {
    return s.error_codes.empty() ? std::string("none") : fmt::format("{}", fmt::join(s.error_codes, ", "));
  });
  md += row("warnings", summaries, [](const auto& s) { return std::to_string(s.warnings); });
  return md;
}

}  // namespace onnxproof
