#pragma once
// Writers for the detection sets of the parity proof (parity/detections.h): report.json's
// detections[], a Markdown and an HTML table, and the terminal's lines.

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "onnxproof/parity/parity.h"

namespace onnxproof {

/// report.json's detections[]: per set x case x provider x level, the counts (PyTorch, ONNX
/// Runtime, matched, one side only, of those at the threshold), the worst box/score/extra errors,
/// their budgets and rule, and the status. An empty array when the model has no detection set.
nlohmann::json detection_rows_to_json(const ParityResult& result);

/// "## Detections" with one table row per set x case x provider x level; "" when there are none.
std::string detections_to_markdown(const ParityResult& result);

/// The same table in HTML; "" when there are none.
std::string detections_to_html(const ParityResult& result);

/// One line per set x provider x level: cases passed, matched detections, one-side-only ones
/// (at the threshold), worst box and score error against their budgets. Nothing when none.
void print_detection_summary(std::ostream& out, const ParityResult& result);

}  // namespace onnxproof
