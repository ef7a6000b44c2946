#pragma once
// The ONNX graph's own float64 run, for the values inside a module (localize/graph_view.h): the
// model with every float32 tensor, value and cast made float64, run by ONNX Runtime beside the
// float32 model on the same case, each value asked for compared between the two. What it shows
// is the error the float32 arithmetic adds node by node (growth inside a module), not a wrong
// translation (which both runs compute alike); the source framework's values stay the verdict's.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/parity/parity.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

/// One value's float32 run against its float64 run.
struct Float64Deviation {
  double max_abs = 0;     // largest |float32 - float64| over finite elements
  double scale = 0;       // largest |float64|
  double rel = 0;         // max_abs / scale (0 where the scale is 0)
  int64_t nonfinite = 0;  // elements finite in one run and not in the other
};

struct Float64Run {
  std::map<std::string, Float64Deviation> values;  // by value name, for those both runs gave
  std::string unavailable;                         // why there is none: the float64 copy did not load or run, ...
  /// Operators ONNX Runtime has no float64 kernel for, run in float32 between casts in the copy.
  std::vector<std::string> float32_ops;
};

/// `model` in float64: float32 initializers, Constant values, graph inputs, outputs and value
/// types, Cast targets and ConstantOfShape values made float64, in subgraphs too; inputs that
/// only take float32 (Resize's scales, Upsample's) keep it; the nodes of `float32_ops` (of the
/// top-level graph) compute in float32 between casts.
onnx::ModelProto float64_model(onnx::ModelProto model, const std::set<std::string>& float32_ops = {});

/// Runs `model` (float32) and its float64 copy on `c` with `values` exposed as outputs and
/// compares them. Never fails: what could not run is said in `unavailable`.
Float64Run float64_deviations(const std::filesystem::path& model, const ReferenceCase& c,
                              const std::vector<std::string>& values, const SessionOptions& options);

}  // namespace onnxproof
