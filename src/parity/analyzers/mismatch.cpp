#include "analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "onnxproof/core/source_framework.h"

namespace onnxproof::parity_analyzers {

namespace {

// The row that misses by most: a shape difference first, then the largest error for its budget
// (calibrated rows) or the largest absolute difference.
const ParityRow* worst_row(const std::vector<const ParityRow*>& rows) {
  const auto badness = [](const ParityRow* row) -> double {
    if (!row->comparison.shape_match || !row->comparison.dtype_match) return INFINITY;
    if (row->exact) return row->exact->budget > 0.0 ? row->exact->onnx / row->exact->budget : INFINITY;
    if (row->steps) return row->steps->off_grid > k_off_grid_steps ? 1e9 : row->steps->max_steps;
    return row->comparison.max_abs;
  };
  const ParityRow* worst = rows.front();
  for (const auto* row : rows) {
    if (badness(row) > badness(worst)) worst = row;
  }
  return worst;
}

std::string format_ratio(const ExactDeviation& deviation, const std::string& source) {
  const auto ratio = deviation.ratio();
  return ratio ? fmt::format("{:.3g}x as far from the exact (float64) answer as {} float32 is", *ratio, source)
               : fmt::format("off the exact (float64) answer where {} float32 is exact", source);
}

// `source`: what the reference's framework is called ("PyTorch").
std::string calibrated_miss_message(const ParityRow& worst, std::size_t failed_cases, std::size_t cases,
                                    const std::string& source) {
  const auto& d = *worst.exact;
  const auto& cmp = worst.comparison;
  // NaN/Inf positions carry no distance: said apart (NAN_OR_INF has them too).
  const std::string nan =
      cmp.nan_mismatches ? fmt::format(", {} of them NaN/Inf where the other side is not", cmp.nan_mismatches) : "";
  if (cmp.mismatches == cmp.nan_mismatches) {  // no finite value over the budget: distances say nothing
    return fmt::format(
        "output '{}' on {} has NaN/Inf where {}'s is finite (or the reverse) "
        "in {} of {} cases; worst {} ({}): {} of {} elements, first at {}",
        worst.output, run_setting(worst), source, failed_cases, cases, worst.data_set, describe_sizes(worst.sizes),
        cmp.nan_mismatches, cmp.elements, worst.worst_at.empty() ? "-" : worst.worst_at);
  }
  return fmt::format(
      "output '{}' on {} is {} in {} of {} cases; worst {} ({}): max |ONNX - exact| {:.3g} "
      "over finite values, {}'s {:.3g}, budget {:.3g} ({:g}x {}'s noise + {:g} epsilons of the scale "
      "{:.3g}); {} of {} elements over it{}, worst at {}",
      worst.output, run_setting(worst), format_ratio(d, source), failed_cases, cases, worst.data_set,
      describe_sizes(worst.sizes), d.onnx, source, d.pytorch, d.budget, k_noise_multiple, source, k_floor_epsilons,
      std::max(d.scale, d.floor_scale), cmp.mismatches, cmp.elements, nan,
      worst.worst_at.empty() ? "-" : worst.worst_at);
}

// A quantized output (the steps rule): its step histogram and what the rule allowed.
std::string steps_miss_message(const ParityRow& worst, std::size_t failed_cases, std::size_t cases,
                               const std::string& source) {
  const StepCount& steps = *worst.steps;
  const StepAllowance& allowed = *worst.allowed_steps;
  const std::string head = fmt::format(
      "output '{}' on {} fails in quantization steps in {} of {} "
      "cases; worst {} ({}): ",
      worst.output, run_setting(worst), failed_cases, cases, worst.data_set, describe_sizes(worst.sizes));
  const Comparison& cmp = worst.comparison;
  if (cmp.nan_mismatches > 0 && cmp.mismatches == cmp.nan_mismatches) {
    return head + fmt::format("{} of {} elements are NaN/Inf where {}'s is finite (or the reverse), first at {}",
                              cmp.nan_mismatches, cmp.elements, source, worst.worst_at.empty() ? "-" : worst.worst_at);
  }
  if (cmp.mismatches == 0) {  // within the steps allowed: the row failed on its class scores alone
    return head + fmt::format(
                      "its steps stay within the allowance ({} at 1 step, {} at 2 or more) but its predicted "
                      "class differs on {} row(s) (ARGMAX_FLIP)",
                      steps.one, steps.over, worst.argmax ? worst.argmax->flips : 0);
  }
  if (steps.off_grid > k_off_grid_steps) {
    return head + fmt::format(
                      "values lie {:.3g} steps off the grid of its DequantizeLinear beyond float rounding "
                      "(up to {:g} is allowed): another scale or zero point than the graph's",
                      steps.off_grid, k_off_grid_steps);
  }
  const std::string own = worst.pytorch_steps
                              ? fmt::format("{} float32 against its float64 twin: {} at 1 step, {} at 2 or more",
                                            source, worst.pytorch_steps->one, worst.pytorch_steps->over)
                              : fmt::format("no float64 run of {} for this case", source);
  return head + fmt::format(
                    "of {} elements, {} at 0 steps from {}'s fake-quant output, {} at 1 step, {} at 2 or more "
                    "(max {:.3g} at {}); allowed: at most {:g} step(s), {} elements moved ({:.3g}% with a binomial "
                    "margin){}; {}",
                    steps.elements, steps.zero, source, steps.one, steps.over, std::round(steps.max_steps),
                    worst.worst_at.empty() ? "-" : worst.worst_at, allowed.max_steps,
                    allowed_moved(steps.elements, allowed.share), 100.0 * allowed.share,
                    allowed.over_share >= 0.0
                        ? fmt::format(", {} at 2 or more", allowed_moved(steps.elements, allowed.over_share))
                        : "",
                    own);
}

// A miss on OpenVINO: whether ONNX Runtime's CPU rows of the output pass says whose the problem
// is; integers past int32 are the CPU plugin's known limit (its inference precision for integers
// is i32, OpenVINO's "CPU Device" documentation).
std::string openvino_hint(const ParityRow& worst, const std::map<RowKey, std::vector<const ParityRow*>>& failed) {
  const bool onnxruntime_passes = !failed.contains(RowKey{"cpu", GraphOptimization::all, worst.output});
  const std::string whose = onnxruntime_passes ? "ONNX Runtime's CPU rows of this output pass: OpenVINO computes it "
                                                 "differently. "
                                               : "";
  if (worst.rule == ToleranceRule::exact)
    return whose +
           "OpenVINO's CPU plugin computes integers in int32: values past +-2^31 wrap; keep such arithmetic "
           "in float or out of the graph";
  return whose +
         "find the node by proving intermediate outputs on OpenVINO (an unfused or float32-only fallback "
         "shows where), and report it to OpenVINO with the model";
}

}  // namespace

// One PARITY_MISMATCH per (provider, optimization, output) that failed, naming the worst case.
void add_mismatch_findings(const AnalyzerInput& in) {
  const auto& [reference, groups, result, locate] = in;
  const auto& failed = groups.failed;
  const auto& disabled_passes = groups.disabled_passes;
  const std::string source = source_title(reference.framework);
  for (const auto& [key, rows] : failed) {
    // A miss that shows with optimizations on and off is one problem: report it once, on "all".
    const ParityRow* first = rows.front();
    if (first->optimization == GraphOptimization::disabled && failed.contains(at_level(*first, GraphOptimization::all)))
      continue;
    const bool also_disabled =
        first->optimization == GraphOptimization::all && failed.contains(at_level(*first, GraphOptimization::disabled));
    const ParityRow* worst = worst_row(rows);
    const auto& cmp = worst->comparison;
    std::string message;
    if (worst->steps && cmp.shape_match && cmp.dtype_match) {
      message = steps_miss_message(*worst, rows.size(), reference.cases.size(), source);
    } else if (worst->exact && cmp.shape_match && cmp.dtype_match) {
      message = calibrated_miss_message(*worst, rows.size(), reference.cases.size(), source);
    } else if (worst->rule == ToleranceRule::exact && cmp.shape_match && cmp.dtype_match) {
      message = fmt::format(
          "output '{}' on {} differs from {}'s {} values (compared exactly) in {} of {} "
          "cases; worst {} ({}): {} of {} elements, largest difference {:.6g}, worst at {}",
          worst->output, run_setting(*worst), source, worst->expected_dtype, rows.size(), reference.cases.size(),
          worst->data_set, describe_sizes(worst->sizes), cmp.mismatches, cmp.elements, cmp.max_abs,
          worst->worst_at.empty() ? "-" : worst->worst_at);
    } else if (!cmp.shape_match || !cmp.dtype_match) {
      // Both shape and dtype: a dtype difference alone read "PyTorch gives 2x8 but ONNX Runtime 2x8".
      message = fmt::format("output '{}' on {}: {} gives {} {} but the runtime {} {} in {} ({})", worst->output,
                            run_setting(*worst), source, worst->expected_shape, worst->expected_dtype,
                            worst->actual_shape, worst->actual_dtype, worst->data_set, describe_sizes(worst->sizes));
    } else {
      message = fmt::format(
          "output '{}' on {} misses rtol {:g} / atol {:g} in {} of {} cases; worst {} ({}): "
          "{} of {} elements ({:.3g}%), max abs {:.3g}, max rel {:.3g}, worst at {}",
          worst->output, run_setting(*worst), worst->tolerance.rtol, worst->tolerance.atol, rows.size(),
          reference.cases.size(), worst->data_set, describe_sizes(worst->sizes), cmp.mismatches, cmp.elements,
          cmp.elements ? 100.0 * static_cast<double>(cmp.mismatches) / static_cast<double>(cmp.elements) : 0.0,
          cmp.max_abs, cmp.max_rel, worst->worst_at.empty() ? "-" : worst->worst_at);
    }
    if (also_disabled) message += " (the same with graph optimizations disabled)";
    std::string hint = "find the first diverging node (compare intermediate outputs), then check its opset translation";
    if (worst->optimization == GraphOptimization::all && disabled_passes.contains({worst->data_set, worst->output})) {
      hint =
          "with graph optimizations disabled this case matches: an ONNX Runtime fusion shifts the numbers; "
          "deploy with the optimization level that passes (the localization below names the optimizer)";
    }
    if (!worst->precision.empty()) hint = openvino_hint(*worst, failed);
    result.findings.push_back({FindingCode::parity_mismatch,
                               Severity::error,
                               "parity",
                               message,
                               worst->output,
                               hint,
                               {.sizes = worst->sizes}});
  }
}

}  // namespace onnxproof::parity_analyzers
