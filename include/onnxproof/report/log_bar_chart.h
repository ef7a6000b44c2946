#pragma once
// A bar chart on a log scale as an SVG: the parity plot (error per case) and the localization's
// error growth (error per module) are drawn with it.

#include <string>
#include <vector>

namespace onnxproof {

struct ChartBar {
  std::string label;
  double value = 0;
  bool highlighted = false;  // drawn red: outside tolerance, or the located module
};

/// A group of bars with a title (one per provider and optimization level, say).
struct ChartPanel {
  std::string name;
  std::vector<ChartBar> bars{};
};

/// The panels side by side under `title`, from 1e-9 to the next power of ten above the largest
/// value (at least 1e-3); empty when no panel has a bar.
std::string log_bar_chart_svg(const std::string& title, const std::vector<ChartPanel>& panels);

/// Text escaped for SVG and HTML (<, >, &, "), control characters spelled as visible text
/// (escape_control_bytes).
std::string markup_escape(const std::string& text);

}  // namespace onnxproof
