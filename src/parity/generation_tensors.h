#pragma once
// The tensors the generation loop (generation.cpp) cuts from the reference and builds for each
// step: one step's rows, the logits' last position, each row's token, masks and positions.

#include <cstdint>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof::detail {

/// Rows [first, first + count) of dimension 0, as a tensor of their own (one step of steps x ...).
Expected<Tensor> rows_of(const Tensor& tensor, int64_t first, std::vector<int64_t> shape);

/// ONNX Runtime's logits (batch x sequence x vocabulary) at the last position: batch x vocabulary.
Expected<Tensor> last_position(const Tensor& logits);

/// The index of the largest value of each row of a batch x vocabulary tensor.
std::vector<int64_t> argmax_rows(const Tensor& logits);

/// An int64 tensor of `shape` holding `values` (all ones when empty: a mask).
Tensor filled_int64(std::vector<int64_t> shape, const std::vector<int64_t>& values);

/// Each new token's position: past_length, past_length + 1, ... in every row.
Tensor positions_from(int64_t batch, int64_t past_length, int64_t length);

}  // namespace onnxproof::detail
