#include "onnxproof/parity/tolerance.h"

#include <cstdio>

#include <cmath>

namespace onnxproof {

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::float64:
    case DType::complex128:
      return {1e-7, 1e-9};
    case DType::float16:
      return {1e-2, 1e-3};
    case DType::bfloat16:
      return {3e-2, 1e-2};
    // The narrow floats: one step of the format at the top of its mantissa (3, 2 and 1 bits).
    case DType::float8e4m3fn:
    case DType::float8e4m3fnuz:
      return {0.125, 0.0};
    case DType::float8e5m2:
    case DType::float8e5m2fnuz:
      return {0.25, 0.0};
    case DType::float4e2m1:
      return {0.5, 0.0};
    default:
      return {1e-3, 1e-5};
  }
}

Expected<void> ToleranceOptions::validate() const {
  const auto valid = [](double value) { return std::isfinite(value) && value >= 0.0; };
  if (rtol && !valid(*rtol))
    return fail(ErrorCode::usage, "--rtol must be a finite number >= 0, not " + std::to_string(*rtol));
  if (atol && !valid(*atol))
    return fail(ErrorCode::usage, "--atol must be a finite number >= 0, not " + std::to_string(*atol));
  for (const auto& [output, tolerance] : per_output) {
    if (!valid(tolerance.rtol) || !valid(tolerance.atol)) {
      return fail(ErrorCode::usage, "--output-tolerance for '" + output + "' must be finite numbers >= 0");
    }
  }
  return {};
}

Tolerance ToleranceOptions::resolve(const std::string& output, DType dtype) const {
  if (const auto it = per_output.find(output); it != per_output.end()) return it->second;
  Tolerance tolerance = default_tolerance(dtype);
  if (rtol) tolerance.rtol = *rtol;
  if (atol) tolerance.atol = *atol;
  return tolerance;
}

Comparison ToleranceOptions::compare(const std::string& output, const Tensor& expected, const Tensor& actual,
                                     DType dtype) const {
  const Tolerance tolerance = resolve(output, dtype == DType::undefined ? expected.dtype() : dtype);
  return overridden(output) ? compare_tensors(expected, actual, tolerance)
                            : compare_at_scale(expected, actual, tolerance.rtol);
}

Expected<void> ToleranceOptions::add_output_tolerance(const std::string& text) {
  const auto eq = text.find('=');
  const auto comma = text.find(',', eq == std::string::npos ? 0 : eq);
  double rtol = -1;
  double atol = -1;
  if (eq == std::string::npos || comma == std::string::npos || std::sscanf(text.c_str() + eq + 1, "%lf", &rtol) != 1 ||
      std::sscanf(text.c_str() + comma + 1, "%lf", &atol) != 1 || rtol < 0 || atol < 0) {
    return fail(ErrorCode::usage, "--output-tolerance '" + text + "': expected NAME=RTOL,ATOL, e.g. logits=1e-2,1e-4");
  }
  per_output[text.substr(0, eq)] = Tolerance{rtol, atol};
  return {};
}

}  // namespace onnxproof
