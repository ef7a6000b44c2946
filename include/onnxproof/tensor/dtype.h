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
  // Narrow types of opsets 19 and 21 (one byte per element, or two elements per byte).
  float8e4m3fn = 17,
  float8e4m3fnuz = 18,
  float8e5m2 = 19,
  float8e5m2fnuz = 20,
  uint4 = 21,
  int4 = 22,
  float4e2m1 = 23,
};

/// The numpy-style name ("float32", "int64", "bool", "bfloat16"); "undefined(N)" for others.
std::string dtype_name(DType dtype);

/// Parses a numpy-style name (also "float", "double", "half", "bool"); nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

/// Converts an ONNX TensorProto data type number; nullopt for types Tensor cannot hold.
std::optional<DType> dtype_from_onnx(int32_t onnx_type);

/// Bytes per element; 0 for string (stored separately), undefined, and the 4-bit types (uint4,
/// int4, float4e2m1), which pack two elements per byte: see dtype_storage_bytes().
std::size_t dtype_size(DType dtype);

/// True for uint4, int4 and float4e2m1: two elements per byte, the first in the low 4 bits.
bool is_packed_4bit(DType dtype);

/// Bytes that `count` elements take in memory, in a TensorProto's raw_data and in ONNX Runtime:
/// count * dtype_size, or (count + 1) / 2 for the 4-bit types; 0 for string and undefined.
uint64_t dtype_storage_bytes(DType dtype, uint64_t count);

/// True for float16, bfloat16, float32, float64 and the float8 and float4 types.
bool is_floating(DType dtype);

/// Decodes one float8 (`bits` is the byte) or float4e2m1 (`bits` is the 4-bit code) value, as
/// ONNX defines the format: NaN where the format has one, +-inf only for float8e5m2.
double narrow_float_to_double(DType dtype, uint8_t bits);

/// IEEE half and bfloat16 bit patterns to and from float.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace onnxproof
