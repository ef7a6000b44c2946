#pragma once
// The calibrated rule: ONNX Runtime's output must be about as close to the exact answer (the
// model run in float64 by the front end) as PyTorch's own float32 output is. PyTorch's distance
// from exact is this model's float noise at this input; the budget is a multiple of it plus a
// floor of a few epsilons of the output's scale, so exact-zero noise never makes it zero.
// bench/verdicts/RESULTS.md has the measurements behind the constants.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxproof/parity/compare.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

/// ONNX Runtime may be this many times as far from exact as PyTorch float32.
inline constexpr double k_noise_multiple = 8.0;
/// The floor of the budget, in epsilons of the output's dtype times the output's scale.
inline constexpr double k_floor_epsilons = 4.0;
/// The plausible bug a comparison must be able to see: the output off by this fraction.
inline constexpr double k_plausible_bug = 1e-2;

/// The rule in one sentence, for reports, around the source framework's title ("PyTorch"): the
/// head, the title, then the tail (rule_sentence() puts them together).
inline constexpr const char* k_rule_sentence_head = "each floating output of ONNX Runtime must be within 8x ";
inline constexpr const char* k_rule_sentence_tail =
    " float32's own distance from the exact "
    "(float64) answer, plus 4 epsilons of the output's scale (rule 'calibrated'; rule 'pooled' where a case has "
    "no float64 run of its own and the noise is the median of the cases that have one); outputs without a "
    "float64 reference must be within rtol 1e-3 of each value or of 1% of the output's largest value, whichever "
    "is larger (rule 'fixed'), "
    "--rtol/--atol/--output-tolerance override them all and compare element by element (rule 'user'), integers "
    "and bools compare exactly.";

static_assert(k_noise_multiple == 8.0 && k_floor_epsilons == 4.0, "k_rule_sentence_* quote the constants");

/// The rule in one sentence with the reference named by its source `framework`
/// (core/source_framework.h; empty: PyTorch).
std::string rule_sentence(const std::string& framework);

/// Which rule decided a parity row.
enum class ToleranceRule {
  calibrated,  // against the float64 reference, budget from the source framework's own noise
  fixed,       // rtol/atol defaults: no float64 reference for this output
  pooled,      // no float64 run for this case (time budget): the median noise of the cases with one
  user,        // --rtol/--atol/--output-tolerance given
  exact,       // integers, bools, strings: equal or not
  domain,      // a random output (random_outputs.h): shape, dtype and value domain only, no values
  steps,       // a quantized output (quantize/steps.h): in quantization steps against PyTorch's fake-quant run
};

/// "calibrated", "fixed", "user", "exact".
const char* rule_name(ToleranceRule rule);

/// Distances from the exact answer, for one output of one case (max over finite elements).
struct ExactDeviation {
  double onnx = 0.0;     // max |ONNX Runtime - exact|
  double pytorch = 0.0;  // max |PyTorch float32 - exact|
  double scale = 0.0;    // max |exact|
  double low = 0.0;      // min(exact) and max(exact): how much the output varies
  double high = 0.0;
  double budget = 0.0;       // the most |ONNX Runtime - exact| may be
  double floor_scale = 0.0;  // the scale the floor's epsilons are of: max(scale, the output's median scale)
  /// onnx / pytorch ("ONNX is 1.4x as far from exact as PyTorch"); nullopt when PyTorch is exact.
  std::optional<double> ratio() const;
};

/// PyTorch's noise relative to the output's scale in one case: max |pytorch - exact| / max |exact|
/// (0 for an all-zero output). parity pools it over cases (the median), so a case whose float32
/// result happens to land on the exact one does not shrink the budget to the floor.
double relative_noise(const Tensor& pytorch, const Tensor& exact);

/// The noise and floor of a model that computes in `precision` (float16 for the float16 variant of
/// the proof) while PyTorch's output is `output` (float32): rounding error grows in proportion to
/// the unit roundoff to first order, so PyTorch float32's measured noise is scaled by
/// epsilon(precision) / epsilon(output) (float16 / float32: 2^-10 / 2^-23 = 8192), and the floor
/// takes precision's epsilon. 1 and the output's own epsilon when `precision` is undefined or the
/// output's dtype. docs/providers.md explains the derivation.
struct PrecisionScale {
  double noise = 1.0;  // multiplies PyTorch's measured noise
  DType floor_dtype = DType::float32;
};
PrecisionScale precision_scale(DType output, DType precision);

/// Compares ONNX Runtime's `actual` with `exact` under the calibrated budget. The Comparison's
/// max_abs/max_rel stay ONNX Runtime against PyTorch float32 (what a user compares by hand);
/// mismatches count elements farther from exact than the budget, NaN/Inf differences from
/// PyTorch's included. `pooled_relative_noise` is relative_noise_by_output's figure (0 if none).
/// `precision`: the dtype the model computes in when it is not PyTorch's (precision_scale()).
/// `floor_scale`: the output's typical scale over the reference's cases (0 if none): the floor's
/// epsilons are of the larger of it and this case's scale, since a case whose output cancels to
/// a small value (a sum of values of both signs) still rounds at the magnitude of what it summed.
Comparison compare_calibrated(const Tensor& pytorch, const Tensor& exact, const Tensor& actual,
                              double pooled_relative_noise, ExactDeviation& deviation,
                              DType precision = DType::undefined, double floor_scale = 0.0);

/// The calibrated rule for a case without its own float64 run: the noise is
/// `relative_noise` (the median of the cases with one) times the output's scale, and ONNX Runtime
/// is compared with PyTorch, so the budget grows by that noise: |onnx - pytorch| <= |onnx - exact|
/// + |pytorch - exact|. The deviation's `pytorch` is the estimated noise, `onnx` the distance
/// from PyTorch.
Comparison compare_pooled(const Tensor& pytorch, const Tensor& actual, double relative_noise, ExactDeviation& deviation,
                          DType precision = DType::undefined, double floor_scale = 0.0);

/// True when `exact` can calibrate `pytorch`: a float64 tensor of the same shape as a floating
/// PyTorch output.
bool exact_applies(const Tensor& pytorch, const Tensor& exact);

/// Why an output's comparison could not have seen a plausible bug, or "" when it could: the exact
/// (or PyTorch's) values are constant within the budget across every case, they do not change
/// with the inputs, or a change of k_plausible_bug of the output stays inside the budget in every
/// case.
struct EvidenceSample {
  double low = 0.0;  // min and max of the values compared against
  double high = 0.0;
  double scale = 0.0;
  double budget = 0.0;
};
/// `input_effect`: the largest change of the output between cases of one shape with different
/// inputs (nullopt when no two cases share a shape); within the budget, the output ignores its
/// inputs.
std::string weak_evidence_reason(const std::vector<EvidenceSample>& samples, std::optional<double> input_effect);

}  // namespace onnxproof
