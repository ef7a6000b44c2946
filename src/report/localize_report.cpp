#include "onnxproof/report/localize_report.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "onnxproof/core/source_framework.h"
#include "onnxproof/report/log_bar_chart.h"
#include "onnxproof/report/markdown.h"

namespace onnxproof {
namespace {

std::string status_of(const ModuleComparison& m) {
  if (!m.matched) return "not paired";
  if (!m.inputs_agree) return m.outputs_agree ? "inputs differ" : "carried";
  return m.outputs_agree ? "agree" : "DIVERGES";
}

std::string figure(double value) { return fmt::format("{:.2g}", value); }

// The table's cells for one module: order, module, class, source, ONNX nodes, inputs' and
// outputs' max rel, outputs' max abs, NaN/Inf, status (or why it was not paired).
std::vector<std::string> cells(std::size_t order, const ModuleComparison& m) {
  const std::string name = m.module.empty() ? "(model)" : m.module;
  if (!m.matched)
    return {std::to_string(order),    name, m.class_name, m.source, std::to_string(m.nodes.size()), "", "", "", "",
            "not paired: " + m.reason};
  return {std::to_string(order),
          name,
          m.class_name,
          m.source,
          std::to_string(m.nodes.size()),
          figure(m.input_error),
          figure(m.output_error),
          figure(m.output_abs),
          std::to_string(m.nonfinite_outputs),
          status_of(m)};
}

std::string summary(const Localization& localization) {
  for (const auto& finding : localization.findings) return finding.message;
  return "";
}

// How to see the whole graph with the per-node errors: Model Explorer with the ONNX adapter, on
// the file the comparison ran on (its node names are the overlay's keys).
std::string model_explorer_command(const Localization& localization) {
  return fmt::format(
      "model-explorer RUN/{} --extensions=model_explorer_onnx "
      "--node_data_paths=RUN/localize/model_explorer_node_data.json",
      localization.model_file.empty() ? "model.onnx" : localization.model_file);
}

std::string view_caption(const GraphView& view) {
  return fmt::format(
      "The first divergent module's nodes (outlined) and what lies two steps before and after them: {} of the "
      "graph's {} nodes, coloured by their module's status; hover a node for its numbers. Every node's figures: "
      "localize/node_errors.json in the run folder; the whole graph with them as an overlay "
      "(pip install ai-edge-model-explorer model-explorer-onnx):",
      view.nodes.size(), view.graph_nodes);
}

constexpr const char* k_headers[] = {"#",      "module",  "class",   "source",  "ONNX nodes",
                                     "in rel", "out rel", "out abs", "NaN/Inf", "status"};

}  // namespace

std::string localization_to_markdown(const Localization& localization) {
  std::string md = fmt::format(
      "\n## Where the outputs diverge\n\n{}\n\nCase {} on {} ({} optimizations), modules in the order they "
      "finish; `in rel` / `out rel`: the largest relative error of the module's inputs and outputs.\n\n"
      "![error growth per module](report-localize.svg)\n\n| {} |\n"
      "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
      markdown_text(summary(localization)), markdown_text(localization.data_set), markdown_text(localization.provider),
      optimization_name(localization.optimization), fmt::join(k_headers, " | "));
  for (std::size_t i = 0; i < localization.modules.size(); ++i) {
    std::vector<std::string> row;  // module, class and source are the model's, and so is the reason
    for (const auto& cell : cells(i, localization.modules[i])) row.push_back(markdown_text(cell));
    md += fmt::format("| {} |\n", fmt::join(row, " | "));
  }
  if (localization.view)
    md +=
        fmt::format("\n{}\n\n```sh\n{}\n```\n", view_caption(*localization.view), model_explorer_command(localization));
  return md;
}

std::string localization_to_html(const Localization& localization) {
  std::string html = fmt::format("<h2>Where the outputs diverge</h2>\n<p>{}</p>\n{}<table><tr>",
                                 markup_escape(summary(localization)), localization_plot_svg(localization));
  for (const char* header : k_headers) html += fmt::format("<th>{}</th>", header);
  html += "</tr>\n";
  for (std::size_t i = 0; i < localization.modules.size(); ++i) {
    const auto row = cells(i, localization.modules[i]);
    const bool located = localization.located == i;
    html += located ? "<tr class=\"fail\">" : "<tr>";
    for (const auto& cell : row) html += "<td>" + markup_escape(cell) + "</td>";
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (localization.view)
    html += fmt::format("<h3>The first divergent nodes in the graph</h3>\n<p>{} <code>{}</code></p>\n{}",
                        markup_escape(view_caption(*localization.view)),
                        markup_escape(model_explorer_command(localization)), graph_view_svg(*localization.view));
  return html;
}

ChartSpec localization_chart(const Localization& localization) {
  ChartPanel panel{.name = fmt::format("{}, graph optimizations {}, case {}", localization.provider,
                                       optimization_name(localization.optimization), localization.data_set)};
  for (std::size_t i = 0; i < localization.modules.size(); ++i) {
    const auto& m = localization.modules[i];
    if (!m.matched) continue;
    const double value = m.nonfinite_outputs > 0 ? std::numeric_limits<double>::infinity() : m.output_error;
    // The located module stands apart from everything downstream that only carries its error.
    const BarKind kind = localization.located == i ? BarKind::first
                         : m.outputs_agree         ? BarKind::within
                                                   : BarKind::outside;
    panel.bars.push_back({.label = m.module.empty() ? "(model)" : m.module, .value = value, .kind = kind});
  }
  return {.title = "Where the error starts: each module's outputs against " + source_title(localization.framework) +
                   "'s, in execution order",
          .x_label = "largest relative error of the module's outputs (log scale)",
          .panels = {panel}};
}

std::string localization_plot_svg(const Localization& localization) {
  return log_bar_chart_svg(localization_chart(localization));
}

}  // namespace onnxproof
