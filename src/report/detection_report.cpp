#include "onnxproof/report/detection_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"

namespace onnxproof {

namespace {

std::string status_of(const DetectionRow& row) { return !row.note.empty() ? "error" : row.passed ? "pass" : "fail"; }

// Case, sizes, provider, graph opt, set, status, the reference (PyTorch), ONNX Runtime, matched, one side only
// (at threshold), worst box (budget), worst score (budget), rule or the note.
std::vector<std::string> detection_cells(const DetectionRow& row) {
  const auto& m = row.match;
  std::vector<std::string> cells = {row.data_set, describe_sizes(row.sizes),
                                    row.provider, std::string(optimization_name(row.optimization)),
                                    row.boxes,    status_of(row)};
  if (!row.note.empty()) {
    cells.insert(cells.end(), {"", "", "", "", "", "", row.note});
    return cells;
  }
  cells.insert(cells.end(),
               {std::to_string(m.expected), std::to_string(m.actual), std::to_string(m.matched),
                fmt::format("{} ({})", m.only_expected + m.only_actual, m.at_threshold),
                fmt::format("{:.3g} ({:.3g})", m.worst_box, row.budget.box),
                fmt::format("{:.3g} ({:.3g})", m.worst_score, row.budget.score), rule_name(row.budget.rule)});
  return cells;
}

// The table's columns; the reference's column is its source framework's ("PyTorch").
std::vector<std::string> detection_header(const ParityResult& result) {
  return {"case",
          "sizes",
          "provider",
          "graph opt",
          "set (boxes)",
          "status",
          source_title(result.framework),
          "ONNX Runtime",
          "matched",
          "one side only (at threshold)",
          "worst box error (budget)",
          "worst score error (budget)",
          "rule"};
}

}  // namespace

nlohmann::json detection_rows_to_json(const ParityResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : result.detections) {
    const auto& m = row.match;
    nlohmann::json entry = {{"case", row.data_set},
                            {"sizes", row.sizes},
                            {"provider", row.provider},
                            {"optimization", optimization_name(row.optimization)},
                            {"boxes", row.boxes},
                            {"status", status_of(row)},
                            {"score_threshold", row.score_threshold}};
    if (!row.note.empty()) {
      entry["note"] = row.note;
    } else {
      entry.update({{"source", m.expected},
                    {"onnxruntime", m.actual},
                    {"matched", m.matched},
                    {"only_source", m.only_expected},
                    {"only_onnxruntime", m.only_actual},
                    {"at_threshold", m.at_threshold},
                    {"worst_box_error", m.worst_box},
                    {"worst_score_error", m.worst_score},
                    {"worst_extra_error", m.worst_extra},
                    {"box_budget", row.budget.box},
                    {"score_budget", row.budget.score},
                    {"extra_budget", row.budget.extra},
                    {"rule", rule_name(row.budget.rule)}});
    }
    rows.push_back(std::move(entry));
  }
  return rows;
}

std::string detections_to_markdown(const ParityResult& result) {
  if (result.detections.empty()) return "";
  std::string md =
      "\n## Detections (matched as sets)\n\nBoth sides sorted by score, matched by label and IoU >= 0.5; a "
      "detection on one side only passes only when its score is within the score budget of the threshold.\n\n|";
  const auto header = detection_header(result);
  for (const auto& column : header) md += fmt::format(" {} |", column);
  md += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) md += " --- |";
  md += "\n";
  for (const auto& row : result.detections) {
    std::vector<std::string> cells;
    for (const auto& cell : detection_cells(row)) cells.push_back(markdown_text(cell));
    md += fmt::format("| {} |\n", fmt::join(cells, " | "));
  }
  return md;
}

std::string detections_to_html(const ParityResult& result) {
  if (result.detections.empty()) return "";
  std::string html = "<h2>Detections (matched as sets)</h2>\n<table><tr>";
  for (const auto& column : detection_header(result)) html += fmt::format("<th>{}</th>", markup_escape(column));
  html += "</tr>\n";
  for (const auto& row : result.detections) {
    html += "<tr>";
    const auto cells = detection_cells(row);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string css = i == 5 ? fmt::format(" class=\"{}\"", cells[i]) : "";
      html += fmt::format("<td{}>{}</td>", css, markup_escape(cells[i]));
    }
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

void print_detection_summary(std::ostream& out, const ParityResult& result) {
  struct Group {
    int cases = 0, passed = 0;
    int64_t matched = 0, one_side = 0, at_threshold = 0;
    double box = 0.0, box_budget = INFINITY, score = 0.0, score_budget = INFINITY;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;
  for (const auto& row : result.detections) {
    auto& g = groups[{row.boxes, row.provider, std::string(optimization_name(row.optimization))}];
    ++g.cases;
    g.passed += row.passed;
    if (!row.note.empty()) continue;
    g.matched += row.match.matched;
    g.one_side += row.match.only_expected + row.match.only_actual;
    g.at_threshold += row.match.at_threshold;
    g.box = std::max(g.box, row.match.worst_box);
    g.score = std::max(g.score, row.match.worst_score);
    if (row.match.matched == 0) continue;  // an empty case's budget (scale 0) bounds nothing
    g.box_budget = std::min(g.box_budget, row.budget.box);
    g.score_budget = std::min(g.score_budget, row.budget.score);
  }
  for (const auto& [key, g] : groups) {
    const auto& [set, provider, level] = key;
    out << fmt::format(
        "detections '{}' on {} ({}): {}/{} cases pass, {} matched, {} on one side only ({} at the threshold), worst "
        "box error {:.3g} (smallest budget {:.3g}), worst score error {:.3g} (smallest budget {:.3g})\n",
        set, provider, level, g.passed, g.cases, g.matched, g.one_side, g.at_threshold, g.box, g.box_budget, g.score,
        g.score_budget);
  }
}

}  // namespace onnxproof
