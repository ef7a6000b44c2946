#include "onnxproof/parity/argmax.h"

#include <cmath>
#include <limits>

namespace onnxproof {

std::vector<int64_t> argmax_rows(const Tensor& tensor) {
  if (!is_floating(tensor.dtype()) || tensor.rank() == 0 || tensor.shape().back() < 2) return {};
  const int64_t classes = tensor.shape().back();
  const int64_t rows = tensor.size() / classes;
  std::vector<int64_t> result(static_cast<std::size_t>(rows), 0);
  for (int64_t row = 0; row < rows; ++row) {
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_index = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const double value = tensor.value_as_double(row * classes + c);
      if (value > best) {
        best = value;
        best_index = c;
      }
    }
    result[static_cast<std::size_t>(row)] = best_index;
  }
  return result;
}

std::optional<ArgmaxCheck> check_argmax(const Tensor& expected, const Tensor& actual) {
  if (expected.shape() != actual.shape() || expected.dtype() != actual.dtype()) return std::nullopt;
  const auto expected_top = argmax_rows(expected);
  const auto actual_top = argmax_rows(actual);
  if (expected_top.empty()) return std::nullopt;
  const int64_t classes = expected.shape().back();
  ArgmaxCheck check;
  check.rows = static_cast<int64_t>(expected_top.size());
  check.min_margin = std::numeric_limits<double>::infinity();
  for (int64_t row = 0; row < check.rows; ++row) {
    const auto r = static_cast<std::size_t>(row);
    if (expected_top[r] == actual_top[r]) continue;
    const double margin = expected.value_as_double(row * classes + expected_top[r]) -
                          expected.value_as_double(row * classes + actual_top[r]);
    // A tie in PyTorch's row (margin 0): ONNX Runtime's class is as much PyTorch's top as its own.
    if (!(margin > 0.0)) continue;
    if (check.flips++ == 0) check.first_flip_row = row;
    check.min_margin = std::min(check.min_margin, margin);
  }
  if (check.flips == 0) check.min_margin = 0.0;
  return check;
}

}  // namespace onnxproof
