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

double text_width(const std::string& text, double font_size) {
  // Per-glyph advance in ems, rounded up from common sans-serif fonts (DejaVu Sans is the widest
  // Debian ships by default), so a box computed here holds the rendered text.
  double ems = 0;
  for (const unsigned char c : text) {
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: the glyph was counted
    if (c == 'M' || c == 'W' || c == 'm' || c == 'w')
      ems += 0.95;
    else if (c == 'i' || c == 'l' || c == 'j' || c == '.' || c == ',' || c == '|' || c == '\'' || c == ':')
      ems += 0.35;
    else if (c == ' ')
      ems += 0.34;
    else if ((c >= 'A' && c <= 'Z') || c >= 0x80)
      ems += 0.78;
    else
      ems += 0.66;
  }
  return ems * font_size;
}

namespace {

constexpr double k_font = 11, k_title_font = 13, k_axis_font = 10;
constexpr int k_margin = 10, k_row = 17, k_bar = 11, k_heading = 22, k_plot_width = 420, k_value_column = 64;
constexpr int k_min_label = 60, k_max_label = 340, k_bottom_exponent = -9;
constexpr const char* k_colors[] = {"#1f77b4", "#d62728", "#67000d", "#bbbbbb"};  // by BarKind

// `text` cut (with an ellipsis) to fit `width` pixels; whole UTF-8 characters only.
std::string fit(const std::string& text, double width, double font_size) {
  if (text_width(text, font_size) <= width) return text;
  std::string cut = text;
  while (!cut.empty() && text_width(cut + "\u2026", font_size) > width) {
    cut.pop_back();
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();
    if (!cut.empty() && static_cast<unsigned char>(cut.back()) >= 0xC0) cut.pop_back();
  }
  return cut + "\u2026";
}

// ONNX Runtime's errors start "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : ": in a band one line
// wide the part after it says more (the tooltip keeps the whole message).
std::string without_runtime_prefix(const std::string& note) {
  constexpr std::string_view k_prefix = "[ONNXRuntimeError] : ";
  if (!note.starts_with(k_prefix)) return note;
  std::size_t at = k_prefix.size();
  for (int separators = 0; separators < 2 && at != std::string::npos; ++separators) {
    at = note.find(" : ", at);
    if (at != std::string::npos) at += 3;
  }
  return at == std::string::npos ? note : note.substr(at);
}

// `text` broken at spaces into lines no wider than `width`.
std::vector<std::string> wrap(const std::string& text, double width, double font_size) {
  std::vector<std::string> lines{""};
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    const std::string joined = lines.back().empty() ? word : lines.back() + " " + word;
    if (!lines.back().empty() && text_width(joined, font_size) > width)
      lines.push_back(word);
    else
      lines.back() = joined;
    start = end + 1;
  }
  for (auto& line : lines) line = fit(line, width, font_size);
  return lines;
}

// The SVG being written and the text boxes it holds.
struct Canvas {
  std::string svg;
  std::vector<TextBox> texts;

  // Text with its baseline at y; `anchor_end` right-aligns it at x.
  void text(double x, double y, const std::string& content, double font_size, const std::string& attributes = "",
            bool anchor_end = false) {
    const double width = text_width(content, font_size);
    const double left = anchor_end ? x - width : x;
    texts.push_back({content, left, y - font_size, width, font_size * 1.25});
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\"{}{}>{}</text>\n", x, y, font_size,
                       anchor_end ? " text-anchor=\"end\"" : "", attributes, markup_escape(content));
  }
};

// The chart's horizontal scale: pixels from the plot's left edge for a value.
struct LogScale {
  int left = 0;
  int top_exponent = 0;
  double x_of(double value) const {
    if (!std::isfinite(value)) return left + k_plot_width;
    const double exponent = std::log10(std::max(value, std::pow(10.0, k_bottom_exponent)));
    const double fraction = (exponent - k_bottom_exponent) / (top_exponent - k_bottom_exponent);
    return left + std::clamp(fraction, 0.0, 1.0) * k_plot_width;
  }
};

void draw_bar(Canvas& canvas, const LogScale& scale, const ChartBar& bar, int y, int label_width) {
  const std::string label = fit(bar.label, label_width - 8, k_font);
  const bool first = bar.kind == BarKind::first;
  canvas.text(scale.left - 6, y + k_bar - 1, label, k_font, first ? " font-weight=\"bold\" fill=\"#67000d\"" : "",
              true);
  const char* color = k_colors[static_cast<int>(bar.kind)];
  if (bar.kind == BarKind::rejected) {
    canvas.svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f0f0f0\" stroke=\"{}\" stroke-dasharray=\"3 2\">"
        "<title>{}</title></rect>\n",
        scale.left, y, k_plot_width, k_bar, color, markup_escape(bar.label + ": " + bar.note));
    const std::string note = "not run: " + without_runtime_prefix(bar.note);
    canvas.text(scale.left + 4, y + k_bar - 2, fit(note, k_plot_width + k_value_column - 8, k_axis_font), k_axis_font,
                " fill=\"#555\"");
    return;
  }
  // An exact match has no length on a log scale: a 2-pixel stub still shows it was measured.
  const double end = std::max(scale.x_of(bar.value), scale.left + 2.0);
  canvas.svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {:.3g}</title></rect>\n",
      scale.left, y, end - scale.left, k_bar, color, markup_escape(bar.label), bar.value);
  if (std::isfinite(bar.limit) && bar.limit > 0) {
    const double x = scale.x_of(bar.limit);
    canvas.svg += fmt::format(
        "<line class=\"limit\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\">"
        "<title>allowed: {3:.3g}</title></line>\n",
        x, y - 2, y + k_bar + 2, bar.limit);
  }
  const std::string value = std::isfinite(bar.value) ? fmt::format("{:.2g}", bar.value) : "NaN/Inf";
  canvas.text(scale.left + k_plot_width + 6, y + k_bar - 1, value, k_axis_font, first ? " font-weight=\"bold\"" : "");
}

// The decade ticks and their labels, at least 40 pixels apart, and the axis' label.
void draw_axis(Canvas& canvas, const LogScale& scale, int top, int bottom, const std::string& x_label) {
  const int decades = scale.top_exponent - k_bottom_exponent;
  const int step = std::max(1, static_cast<int>(std::ceil(40.0 * decades / k_plot_width)));
  for (int e = k_bottom_exponent; e <= scale.top_exponent; e += step) {
    const double x = scale.x_of(std::pow(10.0, e));
    canvas.svg +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n", x, top, bottom);
    const std::string label = fmt::format("1e{}", e);
    canvas.text(x - text_width(label, k_axis_font) / 2, bottom + 13, label, k_axis_font);
  }
  canvas.svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#888\"/>\n", scale.left, bottom,
                            scale.left + k_plot_width);
  canvas.text(k_margin, bottom + 30, fit(x_label, scale.left + k_plot_width + k_value_column - k_margin, k_font),
              k_font);
}

void draw_legend(Canvas& canvas, int x, int y, const ChartSpec& spec, const std::vector<bool>& used) {
  const char* names[] = {"within tolerance", "outside tolerance", "first divergence", "not run"};
  for (int kind = 0; kind < 4; ++kind) {
    if (!used[kind]) continue;
    canvas.svg +=
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", x, y - 9, k_colors[kind]);
    canvas.text(x + 14, y, names[kind], k_axis_font);
    x += 14 + static_cast<int>(text_width(names[kind], k_axis_font)) + 14;
  }
  if (!used[4]) return;
  canvas.svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\" stroke-width=\"2\"/>\n",
                            x + 4, y - 11, y + 2);
  canvas.text(x + 12, y, spec.limit_legend, k_axis_font);
}

}  // namespace

ChartLayout lay_out_log_bar_chart(const ChartSpec& spec) {
  ChartLayout layout;
  double largest = 1e-3, label_width = k_min_label;
  std::size_t bars = 0;
  std::vector<bool> used(5, false);  // the four kinds, then the tolerance tick
  for (const auto& panel : spec.panels) {
    for (const auto& bar : panel.bars) {
      if (std::isfinite(bar.value)) largest = std::max(largest, bar.value);
      if (std::isfinite(bar.limit)) largest = std::max(largest, bar.limit);
      label_width = std::max(label_width, text_width(bar.label, k_font) + 12);
      used[static_cast<int>(bar.kind)] = true;
      used[4] = used[4] || (std::isfinite(bar.limit) && bar.limit > 0 && bar.kind != BarKind::rejected);
    }
    bars += panel.bars.size();
  }
  if (bars == 0) return layout;
  const int labels = static_cast<int>(std::min<double>(label_width, k_max_label));
  const LogScale scale{.left = k_margin + labels, .top_exponent = static_cast<int>(std::ceil(std::log10(largest)))};
  layout.width = scale.left + k_plot_width + k_value_column + k_margin;

  Canvas canvas;
  int y = k_margin;
  for (const auto& line : wrap(spec.title, layout.width - 2 * k_margin, k_title_font)) {
    y += 17;
    canvas.text(k_margin, y, line, k_title_font, " font-weight=\"bold\"");
  }
  const int plot_top = y + 6;
  y = plot_top;
  for (const auto& panel : spec.panels) {
    if (panel.bars.empty()) continue;
    if (!panel.name.empty()) {
      y += k_heading;
      canvas.text(k_margin, y - 6, fit(panel.name, layout.width - 2 * k_margin, k_font), k_font,
                  " font-weight=\"bold\"");
    }
    for (const auto& bar : panel.bars) {
      draw_bar(canvas, scale, bar, y + 3, labels);
      y += k_row;
    }
  }
  std::string body = std::move(canvas.svg);
  canvas.svg.clear();
  draw_axis(canvas, scale, plot_top, y + 4, spec.x_label);  // grid lines go under the bars
  draw_legend(canvas, k_margin, y + 56, spec, used);
  layout.height = y + 66;
  layout.svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{2}{3}</svg>\n",
      layout.width, layout.height, canvas.svg, body);
  layout.texts = std::move(canvas.texts);
  return layout;
}

std::string log_bar_chart_svg(const ChartSpec& spec) { return lay_out_log_bar_chart(spec).svg; }

}  // namespace onnxproof
