#pragma once
// The localization in the report: a table of modules in execution order with their error in and
// out, and the error-growth plot (report-localize.svg).

#include <string>

#include "onnxproof/localize/localize.h"
#include "onnxproof/report/log_bar_chart.h"

namespace onnxproof {

/// "## Where the outputs diverge": the located module, the plot's link and the table.
std::string localization_to_markdown(const Localization& localization);

/// The same section for report.html, the plot inline.
std::string localization_to_html(const Localization& localization);

/// The localization as a chart: one bar per compared module, the located one apart (BarKind::first).
ChartSpec localization_chart(const Localization& localization);

/// The largest relative error of each compared module's outputs, in execution order, log scale;
/// outside tolerance in red. Empty when no module was compared.
std::string localization_plot_svg(const Localization& localization);

/// The first divergent nodes and their neighbourhood (GraphView) as inline SVG: boxes in rows by
/// depth, coloured by status, the first divergent outlined, each with a tooltip of its numbers.
/// Empty for an empty view.
std::string graph_view_svg(const GraphView& view);

}  // namespace onnxproof
