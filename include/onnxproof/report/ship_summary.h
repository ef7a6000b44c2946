#pragma once
// What every report says first: can I ship, where is the problem, what do I do. Findings that
// follow from another (a parity mismatch from a frozen axis, an argmax flip from a data-dependent
// branch) are grouped under their cause, and their hints point at it instead of giving advice
// for a problem that is not the real one.

#include <optional>
#include <string>
#include <vector>

#include "onnxproof/core/finding.h"
#include "onnxproof/core/verdict.h"

namespace onnxproof {

struct Report;

/// A finding that is not a consequence of another, and the findings that follow from it.
struct FindingGroup {
  Finding cause;
  std::vector<Finding> follow_ons{};
};

/// The answer a shipper reads before anything else.
struct ShipSummary {
  Verdict verdict = Verdict::error;
  std::string answer{};      // one sentence: ship it, do not ship (and why), or not proved (and why)
  std::string where{};       // the located module with its source line, or the main cause's where
  std::string what_to_do{};  // the main cause's hint
  std::string cause_code{};  // the main cause's code; empty on a pass
};

/// The model a run ships, by file name in its run folder: the float16 copy a --precision fp16
/// proof proved (model.fp16.onnx), else the proved model (model.sim.onnx or model.onnx); empty
/// when none was proved.
std::string shipped_model_name(const Report& report);

/// The one rule behind shipped_model_name() and published_report.h's shipped_model_of(): the
/// parity step's `model` when it names one, else `onnx_model`'s file name ("" when none).
std::string shipped_file_name(const std::optional<std::string>& parity_model, const std::string& onnx_model);

/// True when `symptom` is a consequence of `cause` (by code and, for a frozen axis, by the
/// case's sizes holding that axis), never by reading messages.
bool follows_from(const Finding& symptom, const Finding& cause);

/// The findings grouped: each follow-on under the first cause it follows from; errors first,
/// then warnings, then info; within a severity the registry's cause order. Info findings that
/// explain nothing else are kept as groups of their own.
std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings);

/// Rewrites each follow-on's hint to name its cause ("follows from FROZEN_DIMENSION at /Reshape:
/// fix that first: ..."), so no finding advises loosening a tolerance for a control-flow bug.
void point_follow_ons_at_causes(std::vector<Finding>& findings);

/// The verdict, where and what to do, from the report's verdict, findings and steps.
ShipSummary summarize_for_shipping(const Report& report);

}  // namespace onnxproof
