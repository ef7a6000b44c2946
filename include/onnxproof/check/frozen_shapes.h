#pragma once
// Static search for dimensions that tracing froze: constants holding the trace-time size of a
// dynamic axis where shapes are consumed, outputs fixed where they should follow a dynamic input
// axis, If nodes with a constant condition, Loop trip counts fixed at a traced size.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/finding.h"

namespace onnxproof {

/// A declared dynamic axis and the size it had when the model was traced (0: unknown).
struct DeclaredAxis {
  std::string input;
  int64_t axis = 0;
  std::string label;
  int64_t example_size = 0;
};

struct FrozenShapeOptions {
  std::vector<DeclaredAxis> dynamic;
  /// output name -> (axis -> label) the export expected to follow a dynamic input axis.
  std::map<std::string, std::map<int64_t, std::string>> output_axes;
};

/// A value's inferred sizes; nullopt where the size is dynamic or unknown.
using InferredDims = std::vector<std::optional<int64_t>>;

/// Every value's shape, from ONNX shape inference on a copy whose declared dynamic axes are
/// symbolic: which axes of which values follow a dynamic input axis. Empty when inference fails.
std::map<std::string, InferredDims> infer_value_shapes(const onnx::ModelProto& model,
                                                       const std::vector<DeclaredAxis>& dynamic);

/// FROZEN_DIMENSION findings (step "check"), each naming the node, the input and the axis it
/// likely froze, with the fix. Example sizes of 1 are not matched against constants (too common).
std::vector<Finding> find_frozen_dimensions(const onnx::ModelProto& model, const FrozenShapeOptions& options);

}  // namespace onnxproof
