#pragma once
// Model-derived text in Markdown (report.md, localization.md): node, value and module names,
// doc strings, messages and paths are the model author's, not ours. They must render as the
// characters they are: no heading, list, link, emphasis, table cell or HTML tag of their own,
// and no control byte in the file.

#include <string>
#include <string_view>

namespace onnxproof {

/// `text` for Markdown prose or a table cell: control characters spelled as visible text
/// (escape_control_bytes), line breaks as spaces (no line of its own, no broken table row),
/// `<`, `>` and `&` as entities (never a tag), and the other characters Markdown gives a meaning
/// behind a backslash: \ ` * _ [ ] # | ~ ! anywhere, - + = and the `.` or `)` of "1. " where the
/// text starts (it may start a line: a list, a setext heading).
std::string markdown_text(std::string_view text);

/// `text` as one Markdown code span: control characters and line breaks as markdown_text makes
/// them, fenced by a run of backticks longer than any inside it (and padded when it begins or
/// ends with one). Raw text otherwise: a code span shows `<script>` as characters. Not for a
/// table cell, where a `|` would still end the cell: use markdown_text there.
std::string markdown_code(std::string_view text);

}  // namespace onnxproof
