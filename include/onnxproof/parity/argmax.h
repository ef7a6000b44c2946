#pragma once
// The task metric that closeness can hide: the predicted class. For a float output whose last
// axis has 2+ classes, each row's argmax is compared; a flip counts even when allclose passes.

#include <cstdint>
#include <optional>

#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

struct ArgmaxCheck {
  int64_t rows = 0;   // rows compared (elements / classes)
  int64_t flips = 0;  // rows whose argmax differs
  int64_t first_flip_row = -1;
  double min_margin = 0.0;  // over flipped rows: expected[top] - expected[actual's top], in the expected logits
};

/// nullopt when the check does not apply (not floating point, shapes differ, rank 0, or fewer
/// than 2 classes on the last axis).
std::optional<ArgmaxCheck> check_argmax(const Tensor& expected, const Tensor& actual);

/// Argmax along the last axis per row (first maximum wins, NaN never wins); empty when not applicable.
std::vector<int64_t> argmax_rows(const Tensor& tensor);

}  // namespace onnxproof
