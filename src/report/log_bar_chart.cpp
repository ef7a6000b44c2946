#include "onnxproof/report/log_bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "onnxproof/core/printable.h"

namespace onnxproof {

std::string markup_escape(const std::string& text) {
  std::string out;
  // A control character is not allowed in XML (the SVG) and must not reach a terminal that shows
  // the file: spelled out as visible text first.
  for (const char c : escape_control_bytes(text)) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string log_bar_chart_svg(const std::string& title, const std::vector<ChartPanel>& panels) {
  double largest = 1e-3;
  std::size_t most_bars = 0;
  for (const auto& panel : panels) {
    for (const auto& bar : panel.bars) largest = std::max(largest, std::isfinite(bar.value) ? bar.value : 0.0);
    most_bars = std::max(most_bars, panel.bars.size());
  }
  if (most_bars == 0) return "";
  const int top_exponent = static_cast<int>(std::ceil(std::log10(largest)));
  constexpr int k_bottom_exponent = -9;
  constexpr int k_bar = 14, k_gap = 4, k_left = 70, k_top = 46, k_height = 220, k_label_space = 150;
  const int panel_width = static_cast<int>(most_bars) * (k_bar + k_gap) + 20;
  const int width = std::max(640, k_left + static_cast<int>(panels.size()) * (panel_width + 20) + 20);
  const auto y_of = [&](double value) {
    const double exponent = std::log10(std::max(value, std::pow(10.0, k_bottom_exponent)));
    const double fraction = (exponent - k_bottom_exponent) / (top_exponent - k_bottom_exponent);
    return k_top + k_height - static_cast<int>(std::min(fraction, 1.0) * k_height);
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"16\" font-size=\"13\">{}</text>\n",
      width, k_top + k_height + k_label_space, k_left, markup_escape(title));
  for (int e = k_bottom_exponent; e <= top_exponent; e += 3) {
    const int y = y_of(std::pow(10.0, e));
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", k_left, y, width - 10, y);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{}</text>\n", k_left - 6, y + 4, e);
  }
  int x0 = k_left + 10;
  for (const auto& panel : panels) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", x0, k_top - 4,
                       markup_escape(panel.name));
    for (std::size_t i = 0; i < panel.bars.size(); ++i) {
      const ChartBar& bar = panel.bars[i];
      const int x = x0 + static_cast<int>(i) * (k_bar + k_gap);
      // An exact match has no height on a log scale: a 2-pixel stub still shows it was measured;
      // NaN or infinity reaches the top.
      const double value = std::isfinite(bar.value) ? bar.value : std::pow(10.0, top_exponent);
      const int y = std::min(y_of(value), k_top + k_height - 2);
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3g}</title></rect>\n", x, y,
          k_bar, k_top + k_height - y, bar.highlighted ? "#d62728" : "#1f77b4", markup_escape(bar.label), bar.value);
      svg += fmt::format("<text transform=\"translate({},{}) rotate(60)\" font-size=\"9\">{}</text>\n", x + 4,
                         k_top + k_height + 8, markup_escape(bar.label));
    }
    x0 += panel_width + 20;
  }
  return svg + "</svg>\n";
}

}  // namespace onnxproof
