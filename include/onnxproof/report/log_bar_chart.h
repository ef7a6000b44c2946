#pragma once
// A horizontal bar chart on a log scale as an SVG: the parity plot (error per case) and the
// localization's error growth (error per module) are drawn with it. One row per bar, so labels
// never collide whatever the count; the width follows the longest label.

#include <cmath>
#include <string>
#include <vector>

namespace onnxproof {

/// How a bar is drawn.
enum class BarKind {
  within,    // blue: inside its tolerance
  outside,   // red: outside its tolerance (or downstream of the first divergence)
  first,     // dark red, bold label: the first module whose outputs diverge
  rejected,  // no bar, a grey band with the note: the case never ran (the shape was refused)
};

struct ChartBar {
  std::string label;
  double value = 0;
  BarKind kind = BarKind::within;
  double limit = NAN;  // the allowed error for this bar, drawn as a black tick; NaN: none
  std::string note{};  // for a rejected bar: why
};

/// A group of bars with a heading (one per provider and optimization level, say).
struct ChartPanel {
  std::string name;
  std::vector<ChartBar> bars{};
};

struct ChartSpec {
  std::string title;
  std::string x_label;                         // what the bars measure, under the axis
  std::string limit_legend = "allowed error";  // the tick's meaning in the legend
  std::vector<ChartPanel> panels{};
};

/// A text element as the writer placed it: its box in SVG pixels, estimated from the font size
/// (an upper bound of sans-serif glyph widths), for the layout tests.
struct TextBox {
  std::string text;
  double x = 0, y = 0, width = 0, height = 0;  // top-left corner
};

struct ChartLayout {
  int width = 0;
  int height = 0;
  std::vector<TextBox> texts;
  std::string svg;  // empty when no panel has a bar
};

/// The chart laid out: rows from the top, a log axis from 1e-9 to the next power of ten above the
/// largest value (at least 1e-3), a legend. Labels longer than the label column are cut with an
/// ellipsis (the full text is in the bar's tooltip).
ChartLayout lay_out_log_bar_chart(const ChartSpec& spec);

/// lay_out_log_bar_chart(spec).svg.
std::string log_bar_chart_svg(const ChartSpec& spec);

/// The estimated width in pixels of `text` at `font_size` in a sans-serif font (generous, so
/// boxes computed with it contain the real glyphs).
double text_width(const std::string& text, double font_size);

/// Text escaped for SVG and HTML (<, >, &, "), control characters spelled as visible text
/// (escape_control_bytes).
std::string markup_escape(const std::string& text);

}  // namespace onnxproof
