#pragma once
// The check step: ONNX's checker, strict shape inference, a summary of the model, and the static
// findings that need no runtime (custom domains, ATen fallbacks, an old opset).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxproof/check/frozen_shapes.h"
#include "onnxproof/core/error.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/model/model_io.h"

namespace onnxproof {

/// One dimension of a declared input or output: a fixed size, a symbolic name, or unknown.
struct DimSummary {
  std::optional<int64_t> size;
  std::string symbol;  // dim_param, when set
};

struct ValueSummary {
  std::string name;
  std::string type;        // "float32", or "sequence(float32)", "map", "optional(...)"
  bool has_shape = false;  // false: rank unknown
  std::vector<DimSummary> dims;
};

struct OperatorUse {
  std::string domain;  // "ai.onnx" for the default domain
  std::string op_type;
  int64_t opset = 0;  // the model's opset import for the domain (0 if none)
  int count = 0;      // nodes, subgraphs included
  int in_subgraphs = 0;
};

struct ModelSummary {
  int64_t ir_version = 0;
  std::string producer;                                        // "pytorch 1.13.1"
  std::vector<std::pair<std::string, int64_t>> opset_imports;  // domain ("ai.onnx" for "") -> version
  std::vector<ValueSummary> inputs;                            // graph inputs that are not initializers
  std::vector<ValueSummary> outputs;
  std::vector<OperatorUse> operators;  // sorted by domain, then op type
  int node_count = 0;                  // subgraphs included
  int initializer_count = 0;
  uint64_t initializer_bytes = 0;  // external data included
  uint64_t external_bytes = 0;
};

struct CheckOptions {
  /// Default-domain opsets below this get OPSET_TOO_OLD.
  int64_t min_opset = 17;
  /// The declared dynamic axes (from export.json or --dynamic) for the frozen-shape analysis.
  FrozenShapeOptions frozen;
};

struct CheckResult {
  ModelSummary summary;
  bool checker_passed = false;
  bool shape_inference_passed = false;
  std::vector<Finding> findings;
};

/// Summarizes a model (no validation; never fails).
ModelSummary summarize_model(const onnx::ModelProto& model);

/// Runs the ONNX checker (external data resolved in the model's folder) and strict shape
/// inference with type checks and data propagation; problems become findings. Fails only when
/// the check cannot be done: the model uses an IR version or an opset newer than the installed
/// ONNX library knows. Does not modify the model.
/// Refuses (ErrorCode::unsupported, naming both limits) a model whose IR version or opset is newer
/// than the ONNX library knows or the loaded ONNX Runtime runs: the checker would reject it for the
/// library's age, and no answer about it (valid, supported) would hold. check_model() calls it;
/// so does `onnxproof ops`.
Expected<void> require_known_versions(const onnx::ModelProto& model);

Expected<CheckResult> check_model(const LoadedModel& model, const CheckOptions& options = {});

/// "ai.onnx" for the default domain "", the domain itself otherwise.
std::string display_domain(const std::string& domain);

/// The version of the ONNX library in use ("1.12.0").
std::string onnx_library_version();

}  // namespace onnxproof
