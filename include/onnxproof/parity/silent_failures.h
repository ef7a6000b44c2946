#pragma once
// Silent failures: an execution provider's output that looks like a result but is not one. A
// fused kernel returning zeros, a float16 value pinned at 65504, an overflow to Inf: these are
// what users meet on GPUs while the CPU is right. Each sign counts only where PyTorch's output
// does not show it, so a model whose true answer is all zeros (a ReLU of negatives) is not flagged.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "onnxproof/core/error.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

struct ReferenceCase;

/// What one output of ONNX Runtime shows that PyTorch's does not.
struct SilentSigns {
  /// Every element is exactly zero while PyTorch's output has a non-zero element.
  bool all_zeros = false;
  /// Elements at the dtype's largest finite magnitude (float16's 65504 also counts in a float32
  /// output: a float16 stage cast back), where PyTorch's element is not.
  int64_t saturated = 0;
  double saturated_value = 0.0;  // the magnitude found, e.g. 65504
  /// Elements that are NaN or Inf where PyTorch's element is finite.
  int64_t non_finite = 0;

  bool any() const { return all_zeros || saturated > 0 || non_finite > 0; }
};

/// Compares `actual` with PyTorch's `expected` for the three signs. Tensors of other dtypes or
/// shapes, and non-floating ones, show none.
SilentSigns detect_silent_signs(const Tensor& expected, const Tensor& actual);

/// Which sign to look for in the intermediate values.
enum class SilentSign { all_zeros, saturated, non_finite };

/// "all zeros", "saturated", "NaN/Inf".
std::string_view silent_sign_name(SilentSign sign);

/// True when `values` (one intermediate tensor) shows the sign by itself: all zeros (and not
/// empty), any element at the dtype's saturation magnitude, any NaN/Inf. Non-floating: false.
bool shows_sign(const Tensor& values, SilentSign sign);

/// The first node (in graph order) whose output shows the sign.
struct FirstNode {
  std::string node;     // its name, or "#INDEX" when it has none
  std::string op_type;  // "Mul"
  std::string value;    // the output value that shows it
};

/// Runs a copy of `model` whose every node output of the main graph is also a graph output, on the
/// case `c` with `options` (the provider and level that showed the sign), and returns the first
/// node whose output shows `sign`; for all zeros, only a node that turns an input with a non-zero
/// element into all zeros counts (a zero constant feeding forward is not a culprit). Only the
/// nodes `output` depends on count when it names a graph output: a model may carry infinities
/// legitimately elsewhere (an attention mask of -inf), which say nothing about this output.
/// nullopt when no node's output shows it. Errors: the model cannot be loaded, or is over 2 GiB
/// (ErrorCode::unsupported); ONNX Runtime cannot open or run the copy (ErrorCode::runtime).
Expected<std::optional<FirstNode>> find_first_node_showing(const std::filesystem::path& model, const ReferenceCase& c,
                                                           const SessionOptions& options, SilentSign sign,
                                                           const std::string& output = {});

}  // namespace onnxproof
