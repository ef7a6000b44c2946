#pragma once
// Element types, numbered as ONNX's TensorProto::DataType so they convert without a table.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnxproof {

enum class DType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
};

/// The numpy-style name ("float32", "int64", "bool", "bfloat16"); "undefined(N)" for others.
std::string dtype_name(DType dtype);

/// Parses a numpy-style name (also "float", "double", "half", "bool"); nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

/// Converts an ONNX TensorProto data type number; nullopt for types Tensor cannot hold.
std::optional<DType> dtype_from_onnx(int32_t onnx_type);

/// Bytes per element; 0 for string (stored separately) and undefined.
std::size_t dtype_size(DType dtype);

/// True for float16, bfloat16, float32 and float64.
bool is_floating(DType dtype);

/// IEEE half and bfloat16 bit patterns to and from float.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace onnxproof
