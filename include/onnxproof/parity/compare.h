#pragma once
// Elementwise comparison of an actual tensor against an expected one, in the manner of
// numpy.testing.assert_allclose (|actual - expected| <= atol + rtol * |expected|) or at the
// output's scale (compare_at_scale: atol + rtol * max|expected|), NaN equal to
// NaN, infinities equal when they have the same sign; integers, bools and strings exactly.

#include <cstdint>
#include <string>

#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct Comparison {
  bool dtype_match = true;
  bool shape_match = true;
  int64_t elements = 0;
  int64_t mismatches = 0;      // elements outside tolerance (NaN/Inf differences included)
  int64_t nan_mismatches = 0;  // positions where exactly one side is NaN or the infinities differ
  double max_abs = 0.0;        // over finite pairs
  double max_rel = 0.0;        // |diff| / |expected| over finite pairs with expected != 0
  int64_t worst_index = -1;    // flat index of the largest |diff| - (atol + rtol*|expected|)
  bool allclose = true;

  /// One line: "ok" or what differed ("3 of 100 elements differ, max abs 0.02 at 17 ...").
  std::string describe() const;
};

/// Compares `actual` with `expected`. Different dtypes or shapes give allclose = false with
/// dtype_match / shape_match cleared and no elementwise figures.
Comparison compare_tensors(const Tensor& expected, const Tensor& actual, const Tolerance& tolerance = {});

/// The largest magnitude of a tensor's finite values (0 when it has none): the output's scale.
double finite_scale(const Tensor& tensor);

/// Like compare_tensors, but every element of a floating output gets the budget of the output's
/// scale: |actual - expected| <= atol + rtol * max|expected|. Element-wise allclose gives a value
/// near 0 a budget of atol alone, so plain float32 rounding of a logit that happens to be tiny (a
/// sum of large terms that cancel) reads as a mismatch although the output as a whole agrees to
/// rtol. Other dtypes (complex included) compare as compare_tensors does.
Comparison compare_at_scale(const Tensor& expected, const Tensor& actual, const Tolerance& tolerance);

/// Counts the finite elements of `actual` farther than `budget` from `reference` as the
/// comparison's mismatches (with its NaN/Inf differences, already counted) and points its worst
/// element at the largest excess, unless a NaN/Inf difference already is the worst.
void count_over_budget(const Tensor& reference, const Tensor& actual, double budget, Comparison& result);

}  // namespace onnxproof
