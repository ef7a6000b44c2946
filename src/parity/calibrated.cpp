#include "onnxproof/parity/calibrated.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "onnxproof/core/source_framework.h"

namespace onnxproof {

namespace {

// The spacing of the output's dtype at 1.0: the unit of the budget's floor.
double epsilon_of(DType dtype) {
  switch (dtype) {
    case DType::float16:
      return 9.765625e-4;  // 2^-10
    case DType::bfloat16:
      return 7.8125e-3;  // 2^-7
    case DType::float64:
      return std::numeric_limits<double>::epsilon();
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

// The smallest normal value of the dtype: below it a difference is denormal dust, whatever the scale.
double tiny_of(DType dtype) {
  switch (dtype) {
    case DType::float16:
      return 6.1035e-5;
    case DType::float64:
      return std::numeric_limits<double>::min();
    default:
      return std::numeric_limits<float>::min();
  }
}

bool finite(double value) { return std::isfinite(value); }

// The budget's floor: a few epsilons of the output's scale, and never below denormal dust.
double floor_of(DType dtype, double scale) { return k_floor_epsilons * epsilon_of(dtype) * scale + tiny_of(dtype); }

// Against `reference` over the finite pairs: the largest distance of `other` (as `onnx`), the
// largest magnitude and the range of `reference`.
ExactDeviation measure(const Tensor& reference, const Tensor& other) {
  ExactDeviation measured;
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (int64_t i = 0; i < reference.size(); ++i) {
    const double r = reference.value_as_double(i);
    const double o = other.value_as_double(i);
    if (!finite(r) || !finite(o)) continue;
    measured.onnx = std::max(measured.onnx, std::fabs(o - r));
    measured.scale = std::max(measured.scale, std::fabs(r));
    low = std::min(low, r);
    high = std::max(high, r);
  }
  measured.low = high >= low ? low : 0.0;
  measured.high = high >= low ? high : 0.0;
  return measured;
}

}  // namespace

const char* rule_name(ToleranceRule rule) {
  switch (rule) {
    case ToleranceRule::calibrated:
      return "calibrated";
    case ToleranceRule::user:
      return "user";
    case ToleranceRule::pooled:
      return "pooled";
    case ToleranceRule::exact:
      return "exact";
    case ToleranceRule::domain:
      return "domain";
    case ToleranceRule::steps:
      return "steps";
    case ToleranceRule::fixed:
      break;
  }
  return "fixed";
}

std::optional<double> ExactDeviation::ratio() const {
  if (!(pytorch > 0.0)) return std::nullopt;
  return onnx / pytorch;
}

bool exact_applies(const Tensor& pytorch, const Tensor& exact) {
  return is_floating(pytorch.dtype()) && exact.dtype() == DType::float64 && exact.shape() == pytorch.shape();
}

double relative_noise(const Tensor& pytorch, const Tensor& exact) {
  if (!exact_applies(pytorch, exact)) return 0.0;
  const ExactDeviation measured = measure(exact, pytorch);
  return measured.scale > 0.0 ? measured.onnx / measured.scale : 0.0;
}

PrecisionScale precision_scale(DType output, DType precision) {
  if (precision == DType::undefined || precision == output || !is_floating(precision)) return {1.0, output};
  return {epsilon_of(precision) / epsilon_of(output), precision};
}

Comparison compare_calibrated(const Tensor& pytorch, const Tensor& exact, const Tensor& actual,
                              double pooled_relative_noise, ExactDeviation& deviation, DType precision,
                              double floor_scale) {
  // NaN/Inf positions, shapes, dtypes and the figures against PyTorch: the plain comparison with a
  // tolerance that accepts every finite difference.
  Comparison result = compare_tensors(pytorch, actual, Tolerance{0.0, std::numeric_limits<double>::infinity()});
  if (!result.dtype_match || !result.shape_match) return result;
  deviation = measure(exact, actual);
  deviation.pytorch = measure(exact, pytorch).onnx;
  const PrecisionScale scaled = precision_scale(pytorch.dtype(), precision);
  const double noise = scaled.noise * std::max(deviation.pytorch, pooled_relative_noise * deviation.scale);
  deviation.floor_scale = std::max(deviation.scale, floor_scale);
  deviation.budget = k_noise_multiple * noise + floor_of(scaled.floor_dtype, deviation.floor_scale);
  count_over_budget(exact, actual, deviation.budget, result);
  return result;
}

Comparison compare_pooled(const Tensor& pytorch, const Tensor& actual, double relative_noise, ExactDeviation& deviation,
                          DType precision, double floor_scale) {
  Comparison result = compare_tensors(pytorch, actual, Tolerance{0.0, std::numeric_limits<double>::infinity()});
  if (!result.dtype_match || !result.shape_match) return result;
  deviation = measure(pytorch, actual);
  const PrecisionScale scaled = precision_scale(pytorch.dtype(), precision);
  deviation.pytorch = relative_noise * deviation.scale;
  deviation.floor_scale = std::max(deviation.scale, floor_scale);
  deviation.budget =
      (k_noise_multiple + 1.0) * scaled.noise * deviation.pytorch + floor_of(scaled.floor_dtype, deviation.floor_scale);
  count_over_budget(pytorch, actual, deviation.budget, result);
  return result;
}

std::string weak_evidence_reason(const std::vector<EvidenceSample>& samples, std::optional<double> input_effect) {
  if (samples.empty()) return "";
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  double budget = 0.0;
  bool bug_visible = false;
  for (const auto& sample : samples) {
    low = std::min(low, sample.low);
    high = std::max(high, sample.high);
    budget = std::max(budget, sample.budget);
    bug_visible = bug_visible || k_plausible_bug * sample.scale > sample.budget;
  }
  if (!(high - low > budget)) {
    return fmt::format(
        "its values stay within {:.3g} of each other across every case, inside the budget {:.3g}: "
        "a model that ignored its inputs would pass",
        high > low ? high - low : 0.0, budget);
  }
  if (input_effect && !(*input_effect > budget)) {
    return fmt::format(
        "it does not change with the input: cases of one shape with different inputs give the same "
        "values within {:.3g} (budget {:.3g}), so a model that ignored its inputs would pass",
        *input_effect, budget);
  }
  if (!bug_visible) {
    return fmt::format(
        "a {:g}% change of it stays inside the budget in every case (largest value {:.3g}, budget "
        "{:.3g})",
        100 * k_plausible_bug, std::max(std::fabs(low), std::fabs(high)), budget);
  }
  return "";
}

std::string rule_sentence(const std::string& framework) {
  return k_rule_sentence_head + source_title(framework) + k_rule_sentence_tail;
}

}  // namespace onnxproof
