#pragma once
// The versions of every tool onnxproof is built with or loads, for --version and reports.

#include <string>
#include <utility>
#include <vector>

namespace onnxproof {

/// onnxproof's own version ("0.1.0").
std::string onnxproof_version();

/// The engine's (tool, version) pairs: onnxproof, onnx (C++), protobuf, onnxruntime (asked from the
/// loaded library) and its build stamp. The front end's (python, torch, ...) come from the
/// interpreter actually used: export.json in a run, front_end_versions() for --version.
std::vector<std::pair<std::string, std::string>> tool_versions();

}  // namespace onnxproof
