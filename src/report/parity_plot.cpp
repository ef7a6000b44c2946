#include "onnxproof/report/parity_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "onnxproof/report/log_bar_chart.h"

namespace onnxproof {
namespace {

// The error that decided a row and the most it was allowed to be: against the exact (float64)
// answer under the calibrated rules; against PyTorch, the largest budget an element gets under
// the fixed and user rules (the row's evidence holds it).
std::pair<double, double> decided_error(const ParityRow& row) {
  if (row.exact) return {row.exact->onnx, row.exact->budget};
  const double scale = row.evidence ? row.evidence->scale : 0.0;
  return {row.comparison.max_abs,
          row.evidence ? row.evidence->budget : row.tolerance.atol + row.tolerance.rtol * scale};
}

// A bar's label: the case and its sizes.
std::string case_label(const ParityRow& row) {
  std::string label = row.data_set;
  for (const auto& [axis, size] : row.sizes) label += fmt::format(" {}={}", axis, size);
  return label;
}

// Worse kinds win when a case has several outputs: rejected, then outside, then within.
int rank(BarKind kind) { return kind == BarKind::rejected ? 3 : kind == BarKind::outside ? 2 : 1; }

}  // namespace

ChartSpec parity_chart(const std::vector<ParityRow>& rows) {
  // One panel per provider and optimization level, one bar per case (its worst output), every
  // case in the reference, a refused one included.
  std::map<std::string, ChartPanel> panels;
  std::map<std::string, std::map<std::string, std::size_t>> index;
  for (const auto& row : rows) {
    const std::string name = row.provider + ", graph optimizations " + std::string(optimization_name(row.optimization));
    auto& panel = panels[name];
    panel.name = name;
    const std::string label = case_label(row);
    auto [it, inserted] = index[name].emplace(label, panel.bars.size());
    if (inserted) panel.bars.push_back({.label = label, .value = 0.0, .kind = BarKind::within});
    ChartBar& bar = panel.bars[it->second];
    if (!row.compared()) {
      bar.kind = BarKind::rejected;
      if (bar.note.empty()) bar.note = row.note.empty() ? std::string(row_status_name(row.status)) : row.note;
      continue;
    }
    const auto [error, allowed] = decided_error(row);
    const BarKind kind = row.status == RowStatus::pass ? BarKind::within : BarKind::outside;
    // The bar shows the output nearest its own limit (or furthest past it).
    const auto ratio = [](double e, double a) { return e / std::max(a, 1e-300); };
    const bool nearer = std::isnan(bar.limit) || ratio(error, allowed) > ratio(bar.value, bar.limit);
    const bool worse = rank(kind) > rank(bar.kind) || (rank(kind) == rank(bar.kind) && nearer);
    if (bar.kind == BarKind::rejected || !worse) continue;
    bar.kind = kind;
    bar.value = error;
    bar.limit = allowed;
  }
  ChartSpec spec{.title = "Parity per case: the error that decided it, against what the rule allows",
                 .x_label = "largest error of ONNX Runtime (log scale; against float64 under the calibrated rule)",
                 .limit_legend = "allowed error"};
  for (auto& [name, panel] : panels) spec.panels.push_back(std::move(panel));
  return spec;
}

std::string parity_plot_svg(const std::vector<ParityRow>& rows) { return log_bar_chart_svg(parity_chart(rows)); }

}  // namespace onnxproof
