#include "onnxproof/parity/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace onnxproof {

namespace {

// One differing 64-bit integer element: equality was decided on the integers; the figures, for
// the report, are in double.
void add_integer_mismatch(const Tensor& expected, const Tensor& actual, int64_t i, double& worst_excess,
                          Comparison& result) {
  ++result.mismatches;
  const double diff = std::fabs(expected.value_as_double(i) - actual.value_as_double(i));
  const double e_abs = std::fabs(expected.value_as_double(i));
  result.max_abs = std::max(result.max_abs, diff);
  if (e_abs > 0.0) result.max_rel = std::max(result.max_rel, diff / e_abs);
  if (diff > worst_excess) {
    worst_excess = diff;
    result.worst_index = i;
  }
}

}  // namespace

Comparison compare_tensors(const Tensor& expected, const Tensor& actual, const Tolerance& tolerance) {
  Comparison result;
  result.elements = expected.size();
  if (expected.dtype() != actual.dtype()) {
    result.dtype_match = false;
    result.allclose = false;
    return result;
  }
  if (expected.shape() != actual.shape()) {
    result.shape_match = false;
    result.allclose = false;
    return result;
  }
  if (expected.dtype() == DType::string) {
    for (int64_t i = 0; i < expected.size(); ++i) {
      if (expected.strings()[static_cast<std::size_t>(i)] != actual.strings()[static_cast<std::size_t>(i)]) {
        if (result.worst_index < 0) result.worst_index = i;
        ++result.mismatches;
      }
    }
    result.allclose = result.mismatches == 0;
    return result;
  }

  const bool exact =
      !is_floating(expected.dtype()) && expected.dtype() != DType::complex64 && expected.dtype() != DType::complex128;
  // Complex tensors compare their real and imaginary parts as separate elements.
  const bool complex = expected.dtype() == DType::complex64 || expected.dtype() == DType::complex128;
  const int64_t scalars = complex ? expected.size() * 2 : expected.size();
  double worst_excess = -INFINITY;
  for (int64_t i = 0; i < scalars; ++i) {
    double e = 0.0;
    double a = 0.0;
    if (complex) {
      const auto index = static_cast<std::size_t>(i);
      e = expected.dtype() == DType::complex64 ? expected.values<float>()[index] : expected.values<double>()[index];
      a = actual.dtype() == DType::complex64 ? actual.values<float>()[index] : actual.values<double>()[index];
    } else if (exact && (expected.dtype() == DType::int64 || expected.dtype() == DType::uint64)) {
      // Exact comparison of 64-bit integers must not go through double.
      const auto index = static_cast<std::size_t>(i);
      const bool same = expected.values<uint64_t>()[index] == actual.values<uint64_t>()[index];
      if (!same) add_integer_mismatch(expected, actual, i, worst_excess, result);
      continue;
    } else {
      e = expected.value_as_double(i);
      a = actual.value_as_double(i);
    }
    const bool e_nan = std::isnan(e);
    const bool a_nan = std::isnan(a);
    if (e_nan || a_nan || std::isinf(e) || std::isinf(a)) {
      if (!(e_nan && a_nan) && e != a) {
        ++result.mismatches;
        ++result.nan_mismatches;
        if (worst_excess < INFINITY) {  // the first NaN/Inf difference is the worst
          worst_excess = INFINITY;
          result.worst_index = complex ? i / 2 : i;
        }
      }
      continue;
    }
    const double diff = std::fabs(a - e);
    const double allowed = exact ? 0.0 : tolerance.atol + tolerance.rtol * std::fabs(e);
    if (diff > result.max_abs) result.max_abs = diff;
    if (e != 0.0 && diff / std::fabs(e) > result.max_rel) result.max_rel = diff / std::fabs(e);
    if (diff > allowed) ++result.mismatches;
    if (diff - allowed > worst_excess) {
      worst_excess = diff - allowed;
      result.worst_index = complex ? i / 2 : i;
    }
  }
  result.allclose = result.mismatches == 0;
  return result;
}

double finite_scale(const Tensor& tensor) {
  double scale = 0.0;
  for (int64_t i = 0; i < tensor.size(); ++i) {
    const double value = std::fabs(tensor.value_as_double(i));
    if (std::isfinite(value)) scale = std::max(scale, value);
  }
  return scale;
}

void count_over_budget(const Tensor& reference, const Tensor& actual, double budget, Comparison& result,
                       double relative, double relative_floor) {
  double worst_excess = -INFINITY;
  int64_t over_budget = 0;
  for (int64_t i = 0; i < reference.size(); ++i) {
    const double r = reference.value_as_double(i);
    const double a = actual.value_as_double(i);
    if (!std::isfinite(r) || !std::isfinite(a)) continue;
    const double excess = std::fabs(a - r) - (budget + relative * std::max(std::fabs(r), relative_floor));
    if (excess > 0.0) ++over_budget;
    if (excess > worst_excess) {
      worst_excess = excess;
      if (result.nan_mismatches == 0) result.worst_index = i;
    }
  }
  result.mismatches = result.nan_mismatches + over_budget;
  result.allclose = result.mismatches == 0;
}

Comparison compare_at_scale(const Tensor& expected, const Tensor& actual, double rtol) {
  if (!is_floating(expected.dtype())) return compare_tensors(expected, actual);
  // NaN/Inf positions, shapes, dtypes and the max abs/rel figures: a tolerance that accepts every
  // finite difference; then each element's budget decides, never below denormal dust.
  Comparison result = compare_tensors(expected, actual, Tolerance{0.0, INFINITY});
  if (!result.dtype_match || !result.shape_match) return result;
  const double dust =
      expected.dtype() == DType::float64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  count_over_budget(expected, actual, dust, result, rtol, k_scale_floor_fraction * finite_scale(expected));
  return result;
}

std::string Comparison::describe() const {
  if (!dtype_match) return "dtypes differ";
  if (!shape_match) return "shapes differ";
  if (allclose) return "ok";
  char line[256];
  std::snprintf(line, sizeof line,
                "%lld of %lld elements differ (%lld NaN/Inf), max abs %.3g, max rel %.3g, worst at %lld",
                static_cast<long long>(mismatches), static_cast<long long>(elements),
                static_cast<long long>(nan_mismatches), max_abs, max_rel, static_cast<long long>(worst_index));
  return line;
}

}  // namespace onnxproof
