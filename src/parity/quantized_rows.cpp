#include "quantized_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace onnxproof::detail {

namespace {

// STEPS_NOT_APPLIED for each output a DequantizeLinear makes whose grid cannot be used.
void add_no_grid_findings(const QuantizedOutputs& quantized, ParityResult& result) {
  const auto& info = finding_code_info(FindingCode::steps_not_applied);
  for (const auto& [output, why] : quantized.no_grid) {
    result.findings.push_back(
        {FindingCode::steps_not_applied, info.severity, "parity",
         fmt::format("output '{}' is quantized, but it is not judged in quantization steps: {}", output, why), output,
         std::string(info.hint)});
  }
}

}  // namespace

QuantizedOutputs quantized_outputs(const std::filesystem::path& model, const Reference& reference,
                                   ParityResult& result) {
  QuantizedOutputs quantized;
  // A model that cannot be read here has no grid (parity's session says why it cannot be loaded).
  auto read = read_quantization(model);
  if (!read) return quantized;
  quantized.grids = std::move(read->grids);
  quantized.pairs = std::move(read->pairs);
  quantized.no_grid = std::move(read->no_grid);
  add_no_grid_findings(quantized, result);
  quantized.opset = read->opset;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const auto grid = quantized.grids.find(c.outputs[k].name);
      const Tensor* exact = exact_output(c, c.outputs[k].name, k);
      if (grid == quantized.grids.end() || !exact || exact->shape() != c.outputs[k].tensor.shape()) continue;
      const StepCount own = count_steps(c.outputs[k].tensor, *exact, grid->second);
      StepCount& pooled = quantized.pooled[grid->first];
      if (own.share_moved() >= pooled.share_moved()) {
        pooled.elements = own.elements;
        pooled.one = own.one;
        pooled.over = own.over;
        pooled.zero = own.zero;
      }
      pooled.max_steps = std::max(pooled.max_steps, own.max_steps);
    }
  }
  return quantized;
}

void audit_provider_rounding(const std::string& provider, const QuantizedOutputs& quantized, ParityResult& result) {
  for (const auto& pair : quantized.pairs) {
    RoundingAudit audit = audit_rounding(provider, pair, quantized.opset);
    if (!audit.error.empty()) {
      result.findings.push_back({FindingCode::quantize_rounding, Severity::info, "parity",
                                 fmt::format("the rounding audit of QuantizeLinear {} -> {} could not run on {}: {}",
                                             dtype_name(pair.input), dtype_name(pair.output), provider, audit.error),
                                 provider, "the model's own comparison below still judges its quantized outputs"});
    } else if (!audit.passed()) {
      const auto& info = finding_code_info(FindingCode::quantize_rounding);
      result.findings.push_back({FindingCode::quantize_rounding, info.severity, "parity",
                                 fmt::format("{}'s QuantizeLinear {} -> {} rounds by {}, not half to even: {} of {} "
                                             "ties differ ({})",
                                             provider, dtype_name(pair.input), dtype_name(pair.output), audit.mode,
                                             audit.mismatches, audit.values, audit.example),
                                 provider, std::string(info.hint)});
    }
    result.rounding.push_back(std::move(audit));
  }
}

bool compare_in_steps(const ReferenceCase& c, std::size_t index, const Tensor& actual,
                      const QuantizedOutputs& quantized, ParityRow& row) {
  const auto grid = quantized.grids.find(row.output);
  const Tensor& expected = c.outputs[index].tensor;
  if (grid == quantized.grids.end() || !is_floating(expected.dtype())) return false;
  // NaN/Inf positions, shapes and dtypes, and the figures against PyTorch, as every rule has them.
  row.comparison = compare_tensors(expected, actual, Tolerance{0.0, std::numeric_limits<double>::infinity()});
  row.rule = ToleranceRule::steps;
  if (!row.comparison.dtype_match || !row.comparison.shape_match) return true;
  const Tensor* exact = exact_output(c, c.outputs[index].name, index);
  if (exact && exact->shape() == expected.shape()) row.pytorch_steps = count_steps(expected, *exact, grid->second);
  row.steps = count_steps(expected, actual, grid->second);
  // The largest share and steps the reference's twin showed over the whole case set (this case's
  // own among them): one case's twin may happen to move no element where the kernels' ordinary
  // requantization ties move 1 step in others (MobileNetV3: 0% in one case, 29-54% in the rest).
  const auto pooled = quantized.pooled.find(row.output);
  row.allowed_steps = step_allowance(pooled != quantized.pooled.end() ? &pooled->second
                                     : row.pytorch_steps              ? &*row.pytorch_steps
                                                                      : nullptr,
                                     row.optimization == GraphOptimization::disabled);
  const StepCount& steps = *row.steps;
  // Mismatches: the elements the rule does not allow (off the grid, or more steps away than allowed);
  // a share of one-step ties above the allowance fails the row with them all counted.
  row.comparison.mismatches = row.comparison.nan_mismatches;
  if (!within_steps(steps, *row.allowed_steps)) {
    const bool off_grid = steps.off_grid > k_off_grid_steps;
    row.comparison.mismatches += off_grid ? 1 : steps.one + steps.over;
    row.comparison.worst_index = off_grid ? steps.off_grid_at : steps.worst_at;
  }
  row.comparison.allclose = row.comparison.mismatches == 0;
  EvidenceSample evidence{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.0, 0.0};
  double widest = 0.0;  // the largest step of the grid: the budget is that many steps of it
  for (int64_t i = 0; i < expected.size(); ++i) {
    const double value = expected.value_as_double(i);
    widest = std::max(widest, grid->second.scale_at(i, expected.shape()));
    if (!std::isfinite(value)) continue;
    evidence.low = std::min(evidence.low, value);
    evidence.high = std::max(evidence.high, value);
    evidence.scale = std::max(evidence.scale, std::fabs(value));
  }
  if (evidence.low > evidence.high) evidence.low = evidence.high = 0.0;
  evidence.budget = row.allowed_steps->max_steps * widest;
  row.evidence = evidence;
  if (is_class_scores(row.output, expected.shape())) {
    // A class whose margin is within the allowed steps is a tie, not a flip.
    const double margin = row.allowed_steps->max_steps * grid->second.scale_at(0, expected.shape());
    const bool exact_fits = exact && exact->shape() == expected.shape();
    row.argmax = check_argmax(expected, actual, ArgmaxNoise{exact_fits ? *exact : expected, margin, margin});
  }
  return true;
}

}  // namespace onnxproof::detail
