#include "onnxproof/tensor/tensor.h"

#include <cstring>
#include <limits>

namespace onnxproof {

Expected<int64_t> element_count(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) {
    if (dim < 0) return fail(ErrorCode::invalid_input, "negative dimension in shape " + format_shape(shape));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      return fail(ErrorCode::limit_exceeded, "shape " + format_shape(shape) + " has too many elements");
    }
    count *= dim;
  }
  return count;
}

std::string format_shape(std::span<const int64_t> shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += 'x';
    text += std::to_string(shape[i]);
  }
  return text;
}

Expected<Tensor> Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  ONNXPROOF_TRY_ASSIGN(const int64_t count, element_count(shape));
  if (dtype == DType::string) {
    return from_strings(std::move(shape), std::vector<std::string>(static_cast<std::size_t>(count)));
  }
  const std::size_t item = is_packed_4bit(dtype) ? 1 : dtype_size(dtype);
  if (item == 0) return fail(ErrorCode::unsupported, "unsupported element type " + dtype_name(dtype));
  if (static_cast<uint64_t>(count) > std::numeric_limits<std::size_t>::max() / item) {
    return fail(ErrorCode::limit_exceeded, "tensor of shape " + format_shape(shape) + " is too large");
  }
  const auto bytes = static_cast<std::size_t>(dtype_storage_bytes(dtype, static_cast<uint64_t>(count)));
  return from_bytes(dtype, std::move(shape), std::vector<std::byte>(bytes));
}

Expected<Tensor> Tensor::from_bytes(DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes) {
  if (dtype_size(dtype) == 0 && !is_packed_4bit(dtype))
    return fail(ErrorCode::unsupported, "unsupported element type " + dtype_name(dtype));
  ONNXPROOF_TRY_ASSIGN(const int64_t count, element_count(shape));
  const uint64_t needed = dtype_storage_bytes(dtype, static_cast<uint64_t>(count));
  if (is_packed_4bit(dtype)
          ? bytes.size() != needed
          : bytes.size() / dtype_size(dtype) != static_cast<uint64_t>(count) || bytes.size() % dtype_size(dtype) != 0) {
    return fail(ErrorCode::invalid_input, "shape " + format_shape(shape) + " of " + dtype_name(dtype) + " needs " +
                                              std::to_string(needed) + " bytes, got " + std::to_string(bytes.size()));
  }
  Tensor tensor;
  tensor.m_dtype = dtype;
  tensor.m_shape = std::move(shape);
  tensor.m_size = count;
  tensor.m_bytes = std::move(bytes);
  return tensor;
}

Expected<Tensor> Tensor::from_strings(std::vector<int64_t> shape, std::vector<std::string> strings) {
  ONNXPROOF_TRY_ASSIGN(const int64_t count, element_count(shape));
  if (strings.size() != static_cast<uint64_t>(count)) {
    return fail(ErrorCode::invalid_input, "shape " + format_shape(shape) + " needs " + std::to_string(count) +
                                              " strings, got " + std::to_string(strings.size()));
  }
  Tensor tensor;
  tensor.m_dtype = DType::string;
  tensor.m_shape = std::move(shape);
  tensor.m_size = count;
  tensor.m_strings = std::move(strings);
  return tensor;
}

double Tensor::value_as_double(int64_t index) const {
  const auto i = static_cast<std::size_t>(index);
  switch (m_dtype) {
    case DType::float32:
      return values<float>()[i];
    case DType::float64:
      return values<double>()[i];
    case DType::float16:
      return half_to_float(values<uint16_t>()[i]);
    case DType::bfloat16:
      return bfloat16_to_float(values<uint16_t>()[i]);
    case DType::int8:
      return values<int8_t>()[i];
    case DType::uint8:
      return values<uint8_t>()[i];
    case DType::int16:
      return values<int16_t>()[i];
    case DType::uint16:
      return values<uint16_t>()[i];
    case DType::int32:
      return values<int32_t>()[i];
    case DType::uint32:
      return values<uint32_t>()[i];
    case DType::int64:
      return static_cast<double>(values<int64_t>()[i]);
    case DType::uint64:
      return static_cast<double>(values<uint64_t>()[i]);
    case DType::boolean:
      return values<uint8_t>()[i] != 0 ? 1.0 : 0.0;
    case DType::float8e4m3fn:
    case DType::float8e4m3fnuz:
    case DType::float8e5m2:
    case DType::float8e5m2fnuz:
      return narrow_float_to_double(m_dtype, values<uint8_t>()[i]);
    case DType::uint4:
    case DType::int4:
    case DType::float4e2m1: {
      // Two elements per byte, the first in the low 4 bits.
      const uint8_t code = (values<uint8_t>()[i / 2] >> (4 * (i % 2))) & 0x0FU;
      if (m_dtype == DType::uint4) return code;
      if (m_dtype == DType::int4) return code >= 8 ? code - 16 : code;
      return narrow_float_to_double(m_dtype, code);
    }
    case DType::complex64:
      return values<float>()[2 * i];
    case DType::complex128:
      return values<double>()[2 * i];
    case DType::string:
    case DType::undefined:
      break;
  }
  return 0.0;
}

}  // namespace onnxproof
