// The neighbourhood of the first divergent nodes drawn as inline SVG: one box per node in rows by
// depth (producers above consumers), coloured by its module's status and share of outputs
// outside the budget, the first divergent nodes outlined, a native <title> tooltip with the
// numbers. Nothing is fetched: the report opens offline.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "onnxproof/report/localize_report.h"

namespace onnxproof {
namespace {

constexpr double k_box_width = 150;
constexpr double k_box_height = 36;
constexpr double k_column = 170;
constexpr double k_row = 70;
constexpr double k_margin = 20;
constexpr double k_legend = 40;

std::string fill_of(const NodeError& node) {
  switch (node.status) {
    case NodeStatus::first:
      return "#d32f2f";
    case NodeStatus::diverges:
      return "#ef6c00";
    case NodeStatus::carried:
      return node.share_outside > 0.1 ? "#ffb74d" : "#ffe082";
    case NodeStatus::agrees:
      return "#c8e6c9";
    case NodeStatus::not_paired:
      return "#e0e0e0";
    case NodeStatus::not_compared:
      break;
  }
  return "#ffffff";
}

std::string shortened(const std::string& text, std::size_t most) {
  return text.size() <= most ? text : text.substr(0, most - 1) + "\u2026";
}

std::string tooltip(const NodeError& node) {
  std::string text = fmt::format("{} ({})\n{}", node.node.empty() ? "(unnamed node)" : node.node, node.op_type,
                                 node_status_name(node.status));
  if (node.status != NodeStatus::not_compared)
    text += fmt::format("\nmodule: {}", node.module.empty() ? "(the model)" : node.module);
  if (node.status != NodeStatus::not_compared && node.status != NodeStatus::not_paired)
    text += fmt::format("\noutputs: max rel {:.3g}, max abs {:.3g}, {:.3g}% of elements outside the budget",
                        node.output_max_rel, node.output_max_abs, 100 * node.share_outside);
  if (node.float64_rel)
    text += fmt::format("\nthis node's output, float32 against the graph's float64 run: max rel {:.3g}, max abs {:.3g}",
                        *node.float64_rel, *node.float64_abs);
  return text;
}

struct Placed {
  double x = 0;
  double y = 0;
};

// Columns within each row, centred on the widest row.
std::vector<Placed> place(const GraphView& view, double& width, double& height) {
  std::map<int, int> in_row;
  for (const int row : view.rows) ++in_row[row];
  int widest = 1, rows = 0;
  for (const auto& [row, count] : in_row) {
    widest = std::max(widest, count);
    rows = std::max(rows, row + 1);
  }
  width = 2 * k_margin + (widest - 1) * k_column + k_box_width;
  height = 2 * k_margin + k_legend + (rows - 1) * k_row + k_box_height;
  std::map<int, int> next;
  std::vector<Placed> placed;
  for (const int row : view.rows) {
    const double offset = (widest - in_row[row]) * k_column / 2;
    placed.push_back({k_margin + offset + next[row]++ * k_column, k_margin + k_legend + row * k_row});
  }
  return placed;
}

std::string legend() {
  std::string svg;
  double x = k_margin;
  for (const auto status : {NodeStatus::first, NodeStatus::diverges, NodeStatus::carried, NodeStatus::agrees,
                            NodeStatus::not_paired, NodeStatus::not_compared}) {
    const NodeError sample{.status = status, .share_outside = 1};
    svg += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#616161\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"11\">{}</text>\n",
        x, k_margin, fill_of(sample), x + 16, k_margin + 10, node_status_name(status));
    x += 30 + 6.5 * static_cast<double>(node_status_name(status).size());
  }
  return svg;
}

}  // namespace

std::string graph_view_svg(const GraphView& view) {
  if (view.nodes.empty()) return "";
  double width = 0, height = 0;
  const auto placed = place(view, width, height);
  width = std::max(width, 2 * k_margin + 620);  // room for the legend
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" role=\"img\" aria-label=\"the first divergent nodes and their neighbourhood\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"6\" markerHeight=\"6\" "
      "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#757575\"/></marker></defs>\n",
      width, height, width, height);
  svg += legend();
  for (const auto& [from, to] : view.edges) {
    const Placed a = placed[from], b = placed[to];
    svg += fmt::format(
        "<path d=\"M{:.0f},{:.0f} C{:.0f},{:.0f} {:.0f},{:.0f} {:.0f},{:.0f}\" fill=\"none\" stroke=\"#9e9e9e\" "
        "marker-end=\"url(#arrow)\"/>\n",
        a.x + k_box_width / 2, a.y + k_box_height, a.x + k_box_width / 2, a.y + k_box_height + k_row / 2,
        b.x + k_box_width / 2, b.y - k_row / 2, b.x + k_box_width / 2, b.y);
  }
  for (std::size_t i = 0; i < view.nodes.size(); ++i) {
    const auto& node = view.nodes[i];
    const bool first = node.status == NodeStatus::first;
    svg += fmt::format(
        "<g class=\"node{}\"><title>{}</title><rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "rx=\"4\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\" text-anchor=\"middle\" fill=\"{}\">{}</text>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"9\" text-anchor=\"middle\" fill=\"{}\">{}</text></g>\n",
        first ? " first" : "", markup_escape(tooltip(node)), placed[i].x, placed[i].y, k_box_width, k_box_height,
        fill_of(node), first ? "#000000" : "#616161", first ? 3 : 1, placed[i].x + k_box_width / 2, placed[i].y + 15,
        first ? "#ffffff" : "#212121", markup_escape(node.op_type), placed[i].x + k_box_width / 2, placed[i].y + 29,
        first ? "#ffffff" : "#424242", markup_escape(shortened(node.node, 26)));
  }
  return svg + "</svg>\n";
}

}  // namespace onnxproof
