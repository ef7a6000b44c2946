#include "onnxproof/tensor/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

namespace onnxproof {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array k_dtypes = {
    DTypeInfo{DType::float32, "float32", 4},
    DTypeInfo{DType::uint8, "uint8", 1},
    DTypeInfo{DType::int8, "int8", 1},
    DTypeInfo{DType::uint16, "uint16", 2},
    DTypeInfo{DType::int16, "int16", 2},
    DTypeInfo{DType::int32, "int32", 4},
    DTypeInfo{DType::int64, "int64", 8},
    DTypeInfo{DType::string, "string", 0},
    DTypeInfo{DType::boolean, "bool", 1},
    DTypeInfo{DType::float16, "float16", 2},
    DTypeInfo{DType::float64, "float64", 8},
    DTypeInfo{DType::uint32, "uint32", 4},
    DTypeInfo{DType::uint64, "uint64", 8},
    DTypeInfo{DType::complex64, "complex64", 8},
    DTypeInfo{DType::complex128, "complex128", 16},
    DTypeInfo{DType::bfloat16, "bfloat16", 2},
    // ml_dtypes' names, which numpy users know.
    DTypeInfo{DType::float8e4m3fn, "float8_e4m3fn", 1},
    DTypeInfo{DType::float8e4m3fnuz, "float8_e4m3fnuz", 1},
    DTypeInfo{DType::float8e5m2, "float8_e5m2", 1},
    DTypeInfo{DType::float8e5m2fnuz, "float8_e5m2fnuz", 1},
    DTypeInfo{DType::uint4, "uint4", 0},
    DTypeInfo{DType::int4, "int4", 0},
    DTypeInfo{DType::float4e2m1, "float4_e2m1fn", 0},
};

constexpr std::array<std::pair<std::string_view, DType>, 5> k_aliases = {{
    {"float", DType::float32},
    {"double", DType::float64},
    {"half", DType::float16},
    {"boolean", DType::boolean},
    {"str", DType::string},
}};

const DTypeInfo* find_info(DType dtype) {
  for (const auto& info : k_dtypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

std::string dtype_name(DType dtype) {
  if (const auto* info = find_info(dtype)) return std::string(info->name);
  return "undefined(" + std::to_string(static_cast<int32_t>(dtype)) + ")";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : k_dtypes) {
    if (info.name == name) return info.dtype;
  }
  for (const auto& [alias, dtype] : k_aliases) {
    if (alias == name) return dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_onnx(int32_t onnx_type) {
  if (const auto* info = find_info(static_cast<DType>(onnx_type))) return info->dtype;
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) {
  const auto* info = find_info(dtype);
  return info ? info->size : 0;
}

bool is_packed_4bit(DType dtype) { return dtype == DType::uint4 || dtype == DType::int4 || dtype == DType::float4e2m1; }

uint64_t dtype_storage_bytes(DType dtype, uint64_t count) {
  if (is_packed_4bit(dtype)) return (count + 1) / 2;
  return count * dtype_size(dtype);
}

bool is_floating(DType dtype) {
  switch (dtype) {
    case DType::float32:
    case DType::float64:
    case DType::float16:
    case DType::bfloat16:
    case DType::float8e4m3fn:
    case DType::float8e4m3fnuz:
    case DType::float8e5m2:
    case DType::float8e5m2fnuz:
    case DType::float4e2m1:
      return true;
    default:
      return false;
  }
}

double narrow_float_to_double(DType dtype, uint8_t bits) {
  // (exponent bits, mantissa bits, bias) of each format; the sign is the top bit.
  int exponent_bits = 4, mantissa_bits = 3, bias = 7;
  switch (dtype) {
    case DType::float8e4m3fn:
      break;
    case DType::float8e4m3fnuz:
      bias = 8;
      break;
    case DType::float8e5m2:
      exponent_bits = 5, mantissa_bits = 2, bias = 15;
      break;
    case DType::float8e5m2fnuz:
      exponent_bits = 5, mantissa_bits = 2, bias = 16;
      break;
    case DType::float4e2m1:
      exponent_bits = 2, mantissa_bits = 1, bias = 1;
      break;
    default:
      return std::nan("");
  }
  const int width = 1 + exponent_bits + mantissa_bits;
  const bool negative = (bits >> (width - 1)) & 1U;
  const int exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int mantissa = bits & ((1 << mantissa_bits) - 1);
  const bool fnuz = dtype == DType::float8e4m3fnuz || dtype == DType::float8e5m2fnuz;
  if (fnuz && bits == 0x80U) return std::nan("");  // the only NaN; there is no -0
  if (dtype == DType::float8e4m3fn && exponent == 15 && mantissa == 7) return std::nan("");
  if (dtype == DType::float8e5m2 && exponent == 31) {
    if (mantissa != 0) return std::nan("");
    return negative ? -INFINITY : INFINITY;
  }
  const double value =
      exponent == 0 ? std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits)
                    : std::ldexp(static_cast<double>(mantissa + (1 << mantissa_bits)), exponent - bias - mantissa_bits);
  return negative ? -value : value;
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000U) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1FU;
  const uint32_t mantissa = bits & 0x3FFU;
  uint32_t out = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else {  // subnormal: value = mantissa * 2^-24
      const float value = std::ldexp(static_cast<float>(mantissa), -24);
      return sign ? -value : value;
    }
  } else if (exponent == 0x1F) {
    out = sign | 0x7F800000U | (mantissa << 13);
  } else {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t float_to_half(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000U);
  const uint32_t abs_bits = bits & 0x7FFFFFFFU;
  if (abs_bits >= 0x7F800000U) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00U | (abs_bits > 0x7F800000U ? 0x200U : 0U));
  }
  if (abs_bits >= 0x477FF000U) return static_cast<uint16_t>(sign | 0x7C00U);  // overflow
  if (abs_bits < 0x38800000U) {  // subnormal or zero in half: round to nearest even
    const float magnitude = std::bit_cast<float>(abs_bits);
    const float scaled = std::nearbyint(magnitude * 16777216.0F);  // 2^24
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(scaled));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t half = ((abs_bits >> 13) - (112U << 10));
  const uint32_t rest = abs_bits & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<uint16_t>((bits >> 16) | 0x40U);
  bits += 0x7FFFU + ((bits >> 16) & 1U);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace onnxproof
