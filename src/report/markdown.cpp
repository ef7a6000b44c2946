#include "onnxproof/report/markdown.h"

#include <algorithm>

#include "onnxproof/core/printable.h"

namespace onnxproof {
namespace {

// Control characters spelled out and line breaks as spaces: the text stays on its line.
std::string one_printable_line(std::string_view text) {
  std::string line = escape_control_bytes(text);
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\t', ' ');
  return line;
}

}  // namespace

std::string markdown_text(std::string_view text) {
  // Significant anywhere: escapes, code, emphasis, links, headings, table cells, strikethrough.
  constexpr std::string_view k_anywhere = "\\`*_[]#|~!";
  // Significant only where a line starts (lists, setext headings), which is where the text may start.
  constexpr std::string_view k_leading = "-+=";
  const std::string line = one_printable_line(text);
  const std::size_t digits = line.find_first_not_of("0123456789");  // "1. " starts an ordered list
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (k_anywhere.find(c) != std::string_view::npos || (i == 0 && k_leading.find(c) != std::string_view::npos) ||
             (i == digits && i > 0 && (c == '.' || c == ')') && (i + 1 == line.size() || line[i + 1] == ' ')))
      out += std::string{'\\', c};
    else
      out += c;
  }
  return out;
}

std::string markdown_code(std::string_view text) {
  std::string body;
  std::size_t run = 0, longest = 0;
  for (const char c : one_printable_line(text)) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    body += c;
  }
  if (body.empty()) return "` `";
  const std::string fence(longest + 1, '`');
  // CommonMark strips one space from each end of a span that begins or ends with a backtick.
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

}  // namespace onnxproof
