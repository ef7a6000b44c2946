#pragma once
// Which tolerance an output is compared with: per-dtype defaults, a global override, and
// per-output overrides (most specific wins).

#include <map>
#include <optional>
#include <string>

#include "onnxproof/core/error.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {

/// Defaults: float32 rtol 1e-3 / atol 1e-5 (numpy.testing.assert_allclose style), float64
/// 1e-7 / 1e-9, float16 1e-2 / 1e-3, bfloat16 3e-2 / 1e-2 (8 mantissa bits, ~4e-3 per rounding);
/// integers, bools and strings compare exactly whatever the tolerance says.
Tolerance default_tolerance(DType dtype);

struct ToleranceOptions {
  std::optional<double> rtol;  // global overrides of the defaults
  std::optional<double> atol;
  std::map<std::string, Tolerance> per_output;  // output name -> tolerance

  /// True when the user set the tolerance of this output (--rtol, --atol or --output-tolerance):
  /// their figures then decide instead of the calibrated rule.
  bool overridden(const std::string& output) const { return rtol || atol || per_output.contains(output); }

  /// The tolerance for one output of the given dtype.
  Tolerance resolve(const std::string& output, DType dtype) const;

  /// Compares one output by the rule these options give it: figures the user set, element by
  /// element like numpy.testing.assert_allclose; the defaults of `dtype` (the expected tensor's
  /// when undefined) relative to the output's scale (compare_at_scale: rtol only, no atol), so
  /// rounding of an element near 0 is no mismatch and an output of small scale is not blind.
  Comparison compare(const std::string& output, const Tensor& expected, const Tensor& actual,
                     DType dtype = DType::undefined) const;

  /// Every tolerance given is a finite number >= 0: a NaN makes every comparison false, so no
  /// element would ever count as a mismatch, and an infinite one accepts anything. ErrorCode::usage
  /// naming the option otherwise.
  Expected<void> validate() const;

  /// Adds one --output-tolerance NAME=RTOL,ATOL (ErrorCode::usage when malformed).
  Expected<void> add_output_tolerance(const std::string& text);
};

}  // namespace onnxproof
