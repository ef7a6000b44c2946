#include "onnxproof/core/printable.h"

#include <cstdio>

namespace onnxproof {

std::string control_escape(unsigned char byte, bool after_c2) {
  char escaped[8];
  if (after_c2 && byte >= 0x80 && byte <= 0x9f) {
    std::snprintf(escaped, sizeof escaped, "\\u00%02x", byte);
    return escaped;
  }
  if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) {
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    return escaped;
  }
  return {};
}

std::string escape_control_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // 0xC2 starts U+0080..U+00BF: held until the next byte says whether it is a C1 control.
    if (byte == 0xc2 && i + 1 < text.size()) {
      const std::string c1 = control_escape(static_cast<unsigned char>(text[i + 1]), true);
      if (!c1.empty()) {
        out += c1;
        ++i;
        continue;
      }
    }
    const std::string c0 = control_escape(byte, false);
    if (c0.empty())
      out += text[i];
    else
      out += c0;
  }
  return out;
}

}  // namespace onnxproof
