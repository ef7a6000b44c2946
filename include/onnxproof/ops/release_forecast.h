#pragma once
// Which ONNX Runtime releases would load a model, without running any: its ai.onnx opset and IR
// version against what each release loads (data/onnxruntime-releases.csv, measured on the
// releases themselves by scripts/probe-onnxruntime-releases.sh). The loader refuses a model
// above either before it looks at an operator; whether a release has a kernel for every node is
// asked of the release itself when it is a --target (ort-cpu@VERSION).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxproof {

struct ReleaseForecast {
  std::string version;  // "1.18.0"
  int newest_opset = 0;
  int newest_ir_version = 0;
  bool loads = false;
  std::string reason;    // why not: "opset 23 is above the 21 it runs"
  std::string released;  // "2025-07-10": the day it was published; empty where the table has none
};

/// The newest opset every release of the table published in the `months` up to its newest
/// dated release loads, and why in one line; opset 0 when the table has no dates. The default
/// export opset stays at or below it, so a model exported with the defaults loads on every
/// ONNX Runtime deployed in that time.
struct PortableOpset {
  int opset = 0;
  std::string reason;
};
PortableOpset portable_opset(int months = 18);

/// Every release of the table, oldest first, judged for a model at `opset` and `ir_version`;
/// empty when the table cannot be read.
std::vector<ReleaseForecast> forecast_releases(int opset, int ir_version);

/// One line: "ONNX Runtime 1.18.0 to 1.31.1 would load it; 1.14.0 to 1.17.3 would refuse it: opset
/// 21 is above the 20 it runs (1.17.3)"; empty for no forecast.
std::string forecast_summary(const std::vector<ReleaseForecast>& forecast);

nlohmann::json forecast_to_json(const std::vector<ReleaseForecast>& forecast);

}  // namespace onnxproof
