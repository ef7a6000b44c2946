#pragma once
// Model-derived text (names, doc strings, messages quoting them) must not drive a terminal or
// break a document: the one spelling of a control character as visible text, shared by the
// CLI's streams and the report writers.

#include <string>
#include <string_view>

namespace onnxproof {

/// The visible spelling of one byte: "\xNN" for a C0 control other than newline and tab, and
/// for DEL; with `after_c2` (the previous byte was 0xC2, so this one ends U+0080..U+00BF)
/// "\u00NN" for a C1 control. Empty when the byte is printable as it is.
std::string control_escape(unsigned char byte, bool after_c2);

/// `text` with every control character (C0 but newline and tab, DEL, and C1 encoded as UTF-8)
/// written as control_escape spells it; everything else unchanged.
std::string escape_control_bytes(std::string_view text);

}  // namespace onnxproof
