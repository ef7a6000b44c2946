#include "onnxproof/report/parity_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "onnxproof/report/log_bar_chart.h"

namespace onnxproof {

std::string parity_plot_svg(const std::vector<ParityRow>& rows) {
  // One panel per provider and optimization level, one bar per case (the largest over its outputs).
  std::map<std::string, ChartPanel> panels;
  std::map<std::string, std::map<std::string, std::size_t>> index;
  for (const auto& row : rows) {
    if (!row.compared()) continue;
    const std::string name = row.provider + ", optimizations " + std::string(optimization_name(row.optimization));
    std::string label = row.data_set;
    for (const auto& [axis, size] : row.sizes) label += fmt::format(" {}={}", axis, size);
    auto& panel = panels[name];
    panel.name = name;
    auto [it, inserted] = index[name].emplace(label, panel.bars.size());
    if (inserted) panel.bars.push_back({label, 0.0, false});
    ChartBar& bar = panel.bars[it->second];
    bar.value = std::max(bar.value, row.comparison.max_abs);
    bar.highlighted |= row.status != RowStatus::pass;
  }
  std::vector<ChartPanel> ordered;
  for (auto& [name, panel] : panels) ordered.push_back(std::move(panel));
  return log_bar_chart_svg("Largest |ONNX Runtime - PyTorch| per case (log scale; red: outside tolerance)", ordered);
}

}  // namespace onnxproof
