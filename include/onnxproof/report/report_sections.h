#pragma once
// The parts of report.md, report.html and the terminal summary that answer "can I ship?" before
// anything else: the summary box (verdict, where, what to do), the model's signature (inputs,
// outputs, dynamic dimensions, opset, exporter), the tolerance rule and the task accuracy, and the
// findings grouped under their causes. Each is its own function so other sections merge apart.

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "onnxproof/report/report.h"

namespace onnxproof {

/// report.json's "ship": answer, where, what_to_do and cause of summarize_for_shipping().
nlohmann::json ship_summary_to_json(const Report& report);
/// report.json's "signature"; null when the report has none.
nlohmann::json signature_to_json(const Report& report);
/// report.json's "given_file": the user's file proved (--onnx) and its binding.
nlohmann::json given_file_to_json(const GivenFile& given);

/// The summary box and, when known, the signature, tolerance rule and accuracy (Markdown).
std::string ship_summary_to_markdown(const Report& report);
std::string signature_to_markdown(const Report& report);
/// "## Findings": each cause with the findings that follow from it indented below it.
std::string findings_to_markdown(const Report& report);

/// The same three for report.html.
std::string ship_summary_to_html(const Report& report);
std::string signature_to_html(const Report& report);
std::string findings_to_html(const Report& report);

/// The terminal's first lines: verdict, where, what to do.
void print_ship_summary(std::ostream& out, const Report& report);
/// The terminal's findings that are not info, grouped: each cause, then its follow-ons indented.
void print_grouped_findings(std::ostream& out, const Report& report);

/// The CSS report.html's sections use.
extern const char* const k_report_css;

}  // namespace onnxproof
