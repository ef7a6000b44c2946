#pragma once
// Tensor: a dense, row-major, owned array of one element type. String tensors keep their
// elements in strings(); every other type keeps them as little-endian bytes in bytes().

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {

/// Number of elements of a shape (1 for a scalar); an error for negative or overflowing dims.
Expected<int64_t> element_count(std::span<const int64_t> shape);

/// "1x3x224x224", or "scalar" for rank 0.
std::string format_shape(std::span<const int64_t> shape);

class Tensor {
 public:
  Tensor() = default;

  /// A zero-filled (or empty-string) tensor. Fails on negative dims or an unsupported dtype.
  static Expected<Tensor> zeros(DType dtype, std::vector<int64_t> shape);

  /// Takes ownership of `bytes`; fails unless bytes.size() == element count * element size.
  static Expected<Tensor> from_bytes(DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes);

  /// A string tensor; fails unless strings.size() == element count.
  static Expected<Tensor> from_strings(std::vector<int64_t> shape, std::vector<std::string> strings);

  DType dtype() const { return m_dtype; }
  const std::vector<int64_t>& shape() const { return m_shape; }
  std::size_t rank() const { return m_shape.size(); }
  int64_t size() const { return m_size; }

  /// Raw element bytes (empty for string tensors).
  std::span<const std::byte> bytes() const { return m_bytes; }
  std::span<std::byte> mutable_bytes() { return m_bytes; }

  /// Elements of a string tensor (empty for every other dtype).
  const std::vector<std::string>& strings() const { return m_strings; }

  /// Typed view; the caller picks T matching dtype() (e.g. float for float32, uint16_t for float16).
  template <class T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(m_bytes.data()), m_bytes.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> mutable_values() {
    return {reinterpret_cast<T*>(m_bytes.data()), m_bytes.size() / sizeof(T)};
  }

  /// Element i as double (float16/bfloat16 decoded; complex: the real part). Not for strings.
  double value_as_double(int64_t index) const;

 private:
  DType m_dtype = DType::float32;
  std::vector<int64_t> m_shape;
  int64_t m_size = 0;
  std::vector<std::byte> m_bytes;
  std::vector<std::string> m_strings;
};

}  // namespace onnxproof
