#include "onnxproof/quantize/steps.h"

#include <algorithm>
#include <cmath>

namespace onnxproof {

StepCount count_steps(const Tensor& reference, const Tensor& actual, const QuantGrid& grid) {
  StepCount count;
  const int64_t size = std::min(reference.size(), actual.size());
  const double epsilon = actual.dtype() == DType::float16 || reference.dtype() == DType::float16 ? 9.765625e-4
                         : actual.dtype() == DType::bfloat16                                     ? 7.8125e-3
                                                                                                 : 1.1920929e-7;
  for (int64_t i = 0; i < size; ++i) {
    const double r = reference.value_as_double(i);
    const double a = actual.value_as_double(i);
    const double scale = grid.scale_at(i, reference.shape());
    if (!std::isfinite(r) || !std::isfinite(a) || !(scale > 0.0)) continue;
    const double steps = std::fabs(a - r) / scale;
    const double whole = std::round(steps);
    // Float rounding of (q - zero point) x scale on either side is no departure from the grid.
    const double rounding = 4.0 * epsilon * std::max(std::fabs(a), std::fabs(r)) / scale;
    ++count.elements;
    (whole == 0.0 ? count.zero : whole == 1.0 ? count.one : count.over) += 1;
    if (steps > count.max_steps) {
      count.max_steps = steps;
      count.worst_at = i;
    }
    const double residue = std::max(0.0, std::fabs(steps - whole) - rounding);
    if (residue > count.off_grid) {
      count.off_grid = residue;
      count.off_grid_at = i;
    }
  }
  return count;
}

StepAllowance step_allowance(const StepCount* pytorch_against_exact, bool unfused) {
  StepAllowance allowed;
  const double floor_share = unfused ? k_tie_share_unfused : k_tie_share;
  allowed.share = floor_share;
  allowed.over_share = unfused ? 0.0 : -1.0;
  if (!pytorch_against_exact) return allowed;
  const StepCount& twin = *pytorch_against_exact;
  allowed.max_steps = std::max(1.0, std::round(k_step_noise_multiple * twin.max_steps));
  // Capped, but never below the twin's own share: the reference moves that much by itself.
  allowed.share = std::min(std::max(k_max_share, twin.share_moved()),
                           std::max(floor_share, k_step_noise_multiple * twin.share_moved()));
  if (unfused && twin.elements > 0) {
    const double over = static_cast<double>(twin.over) / static_cast<double>(twin.elements);
    allowed.over_share = std::min(std::max(k_max_share, over), k_step_noise_multiple * over);
  }
  return allowed;
}

int64_t allowed_moved(int64_t elements, double share) {
  const double expected = share * static_cast<double>(elements);
  return static_cast<int64_t>(std::floor(expected + 3.0 * std::sqrt(expected * (1.0 - share)) + 1.0));
}

bool within_steps(const StepCount& count, const StepAllowance& allowed) {
  if (count.off_grid > k_off_grid_steps) return false;
  if (std::round(count.max_steps) > allowed.max_steps) return false;
  if (allowed.over_share >= 0.0 && count.over > allowed_moved(count.elements, allowed.over_share)) return false;
  return count.one + count.over <= allowed_moved(count.elements, allowed.share);
}

}  // namespace onnxproof
