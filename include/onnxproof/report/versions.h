#pragma once
// The versions of every tool onnxproof is built with or loads, for --version and reports.

#include <string>
#include <utility>
#include <vector>

namespace onnxproof {

/// onnxproof's own version ("0.1.0").
std::string onnxproof_version();

/// (tool, version) pairs: onnxproof, onnx, protobuf, onnxruntime (asked from the loaded library),
/// onnxruntime headers, torch and python (as found when the build was configured).
std::vector<std::pair<std::string, std::string>> tool_versions();

}  // namespace onnxproof
