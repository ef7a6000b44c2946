#pragma once
// The parity step's part for detection sets (parity.cpp calls it): each set compared on each
// case, provider and optimization level (detections.h matches them), and its findings.

#include <string>
#include <vector>

#include "onnxproof/parity/parity.h"

namespace onnxproof::detail {

/// True when `output` belongs to one of the reference's detection sets (it then gets no
/// element-by-element row).
bool in_detection_set(const Reference& reference, const std::string& output);

/// Compares every detection set of `c` between PyTorch's outputs and ONNX Runtime's `outputs`
/// (named by `names`, the session's output order); `base` carries the case, provider and level.
void compare_detection_sets(const Reference& reference, const ReferenceCase& c, const std::vector<std::string>& names,
                            const std::vector<Tensor>& outputs, const ParityRow& base, const ParityOptions& options,
                            std::vector<DetectionRow>& rows);

/// PARITY_MISMATCH per (provider, level, set) that failed, DETECTION_AT_THRESHOLD (info) for the
/// acceptable one-side-only detections, EVIDENCE_WEAK for a set with no detection in any case.
void add_detection_findings(const ParityResult& result, std::vector<Finding>& findings);

}  // namespace onnxproof::detail
