#include "generation_tensors.h"

#include <algorithm>
#include <cstring>

namespace onnxproof::detail {

// Rows [first, first + count) of dimension 0, as a tensor of their own (one step of steps x ...).
Expected<Tensor> rows_of(const Tensor& tensor, int64_t first, std::vector<int64_t> shape) {
  int64_t elements = 1;
  for (const int64_t dim : shape) elements *= dim;
  const std::size_t width = dtype_size(tensor.dtype());
  const auto bytes = tensor.bytes().subspan(static_cast<std::size_t>(first * elements) * width,
                                            static_cast<std::size_t>(elements) * width);
  return Tensor::from_bytes(tensor.dtype(), std::move(shape), std::vector<std::byte>(bytes.begin(), bytes.end()));
}

// ONNX Runtime's logits (batch x sequence x vocabulary) at the last position: batch x vocabulary.
Expected<Tensor> last_position(const Tensor& logits) {
  if (logits.dtype() != DType::float32 || logits.rank() != 3) {
    return fail(ErrorCode::invalid_input,
                "the logits output is " + format_shape(logits.shape()) + ", not float32 batch x sequence x vocabulary");
  }
  const int64_t batch = logits.shape()[0], length = logits.shape()[1], vocabulary = logits.shape()[2];
  if (length < 1 || vocabulary < 1) {
    return fail(ErrorCode::invalid_input, "the logits output is " + format_shape(logits.shape()) +
                                              ": no position or no vocabulary to pick a token from");
  }
  std::vector<float> values(static_cast<std::size_t>(batch * vocabulary));
  const auto all = logits.values<float>();
  for (int64_t row = 0; row < batch; ++row) {
    std::copy_n(all.begin() + (row * length + length - 1) * vocabulary, vocabulary, values.begin() + row * vocabulary);
  }
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return Tensor::from_bytes(DType::float32, {batch, vocabulary}, std::move(bytes));
}

// The index of the largest value of each row of a batch x vocabulary tensor.
std::vector<int64_t> argmax_rows(const Tensor& logits) {
  const int64_t batch = logits.shape()[0], vocabulary = logits.shape()[1];
  std::vector<int64_t> tokens;
  for (int64_t row = 0; row < batch; ++row) {
    int64_t best = 0;
    for (int64_t column = 1; column < vocabulary; ++column) {
      if (logits.value_as_double(row * vocabulary + column) > logits.value_as_double(row * vocabulary + best))
        best = column;
    }
    tokens.push_back(best);
  }
  return tokens;
}

Tensor filled_int64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor tensor = *Tensor::zeros(DType::int64, std::move(shape));
  auto out = tensor.mutable_values<int64_t>();
  for (std::size_t index = 0; index < out.size(); ++index) out[index] = values.empty() ? 1 : values[index];
  return tensor;
}

// Each new token's position: past_length, past_length + 1, ... in every row.
Tensor positions_from(int64_t batch, int64_t past_length, int64_t length) {
  std::vector<int64_t> values;
  for (int64_t row = 0; row < batch; ++row) {
    for (int64_t at = 0; at < length; ++at) values.push_back(past_length + at);
  }
  return filled_int64({batch, length}, values);
}

}  // namespace onnxproof::detail
