#include "onnxproof/report/parity_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace onnxproof {
namespace {

struct Bar {
  std::string label;   // "test_data_set_3 batch=4"
  double max_abs = 0;  // over the case's outputs
  bool failed = false;
};

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string parity_plot_svg(const std::vector<ParityRow>& rows) {
  // One series per provider and optimization level, one bar per case.
  std::map<std::string, std::vector<Bar>> series;
  std::map<std::string, std::map<std::string, std::size_t>> index;
  for (const auto& row : rows) {
    if (!row.compared()) continue;
    const std::string name = row.provider + ", optimizations " + row.optimization;
    std::string label = row.data_set;
    for (const auto& [axis, size] : row.sizes) label += fmt::format(" {}={}", axis, size);
    auto& bars = series[name];
    auto [it, inserted] = index[name].emplace(label, bars.size());
    if (inserted) bars.push_back({label, 0.0, false});
    Bar& bar = bars[it->second];
    bar.max_abs = std::max(bar.max_abs, row.comparison.max_abs);
    bar.failed |= row.status != "pass";
  }
  if (series.empty()) return "";

  // Log scale from 1e-9 to the next power of ten above the largest error (at least 1e-3).
  double largest = 1e-3;
  for (const auto& [name, bars] : series) {
    for (const auto& bar : bars) largest = std::max(largest, bar.max_abs);
  }
  const int top_exponent = static_cast<int>(std::ceil(std::log10(largest)));
  constexpr int k_bottom_exponent = -9;
  constexpr int k_bar = 14, k_gap = 4, k_left = 70, k_top = 46, k_height = 220, k_label_space = 150;
  std::size_t cases = 0;
  for (const auto& [name, bars] : series) cases = std::max(cases, bars.size());
  const int panel_width = static_cast<int>(cases) * (k_bar + k_gap) + 20;
  const int width = std::max(640, k_left + static_cast<int>(series.size()) * (panel_width + 20) + 20);
  const int height = k_top + k_height + k_label_space;
  const auto y_of = [&](double value) {
    const double exponent = std::log10(std::max(value, std::pow(10.0, k_bottom_exponent)));
    const double fraction = (exponent - k_bottom_exponent) / (top_exponent - k_bottom_exponent);
    return k_top + k_height - static_cast<int>(fraction * k_height);
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"16\" font-size=\"13\">Largest |ONNX Runtime - PyTorch| per case (log scale; red: outside "
      "tolerance)</text>\n",
      width, height, k_left);
  for (int e = k_bottom_exponent; e <= top_exponent; e += 3) {
    const int y = y_of(std::pow(10.0, e));
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", k_left, y, width - 10, y);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{}</text>\n", k_left - 6, y + 4, e);
  }
  int x0 = k_left + 10;
  for (const auto& [name, bars] : series) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", x0, k_top - 4, escape(name));
    for (std::size_t i = 0; i < bars.size(); ++i) {
      const int x = x0 + static_cast<int>(i) * (k_bar + k_gap);
      // An exact match has no height on a log scale: a 2-pixel stub still shows the case ran.
      const int y = std::min(y_of(bars[i].max_abs), k_top + k_height - 2);
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3g}</title></rect>\n", x, y,
          k_bar, k_top + k_height - y, bars[i].failed ? "#d62728" : "#1f77b4", escape(bars[i].label), bars[i].max_abs);
      const int label_y = k_top + k_height + 8;
      svg += fmt::format("<text transform=\"translate({},{}) rotate(60)\" font-size=\"9\">{}</text>\n", x + 4, label_y,
                         escape(bars[i].label));
    }
    x0 += panel_width + 20;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace onnxproof
