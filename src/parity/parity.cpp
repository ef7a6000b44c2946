#include "onnxproof/parity/parity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>
#include <tuple>

#include "detection_parity.h"
#include "onnxproof/core/name_table.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {
namespace fs = std::filesystem;

std::string describe_sizes(const std::map<std::string, int64_t>& sizes) {
  std::string text;
  for (const auto& [label, size] : sizes) text += fmt::format("{}{}={}", text.empty() ? "" : ", ", label, size);
  return text.empty() ? "example shape" : text;
}

namespace {

// One name table for the row statuses: row_status_name and parse_row_status both read it.
constexpr NameTable<RowStatus, 4> k_status_names = {
    {RowStatus::pass, "pass"},
    {RowStatus::fail, "fail"},
    {RowStatus::rejected, "rejected"},
    {RowStatus::error, "error"},
};

}  // namespace

std::string_view row_status_name(RowStatus status) { return name_in(k_status_names, status); }

std::optional<RowStatus> parse_row_status(std::string_view name) { return parse_in(k_status_names, name); }

namespace {

// The labels whose size differs from the export example's (all of them when none does): what a
// refused case says about the model.
std::map<std::string, int64_t> changed_sizes(const std::map<std::string, int64_t>& sizes, const Reference& reference) {
  std::map<std::string, int64_t> changed;
  for (const auto& [label, size] : sizes) {
    const auto example = reference.example_sizes.find(label);
    if (example == reference.example_sizes.end() || example->second != size) changed[label] = size;
  }
  return changed.empty() ? sizes : changed;
}

// A fixed dimension the case's input does not have: ONNX Runtime would refuse the run.
std::optional<std::string> fixed_dimension_conflict(const Session& session, const ReferenceCase& c) {
  for (const auto& input : session.inputs()) {
    for (const auto& fed : c.inputs) {
      if (fed.name != input.name || fed.tensor.rank() != input.shape.size()) continue;
      for (std::size_t axis = 0; axis < input.shape.size(); ++axis) {
        if (input.shape[axis] >= 0 && input.shape[axis] != fed.tensor.shape()[axis]) {
          return fmt::format("input '{}' axis {} is fixed at {} in the model, the case has {}", input.name, axis,
                             input.shape[axis], fed.tensor.shape()[axis]);
        }
      }
    }
  }
  return std::nullopt;
}

// Expected output k: by name when the reference names its outputs, else by position.
const NamedTensor* expected_output(const ReferenceCase& c, const std::string& name, std::size_t index) {
  for (const auto& output : c.outputs) {
    if (output.name == name) return &output;
  }
  return index < c.outputs.size() && c.outputs[index].name.empty() ? &c.outputs[index] : nullptr;
}

// Per (provider, output, data set): PyTorch's and ONNX Runtime's argmax rows, for accuracy.
struct PredictionKey {
  std::string provider;
  std::string output;
  std::string data_set;
  auto operator<=>(const PredictionKey&) const = default;
};
struct Predictions {
  std::vector<int64_t> pytorch;
  std::vector<int64_t> onnxruntime;
};
using PredictionMap = std::map<PredictionKey, Predictions>;

struct Variant {
  std::string provider;
  GraphOptimization level;
};

// Output name (or "#k" for an unnamed one) -> PyTorch's median noise relative to the output's scale.
using NoiseByOutput = std::map<std::string, double>;

std::string output_key(const ReferenceCase& c, std::size_t k) {
  return c.outputs[k].name.empty() ? "#" + std::to_string(k) : c.outputs[k].name;
}

NoiseByOutput pooled_relative_noise(const Reference& reference) {
  std::map<std::string, std::vector<double>> samples;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size() && k < c.exact_outputs.size(); ++k) {
      if (c.exact_outputs[k]) samples[output_key(c, k)].push_back(relative_noise(c.outputs[k].tensor, *c.exact_outputs[k]));
    }
  }
  NoiseByOutput pooled;
  for (auto& [name, values] : samples) {
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    pooled[name] = values[values.size() / 2];
  }
  return pooled;
}

// The range of PyTorch's values and the largest budget an element gets: rtol of the scale under
// the fixed rule (compare_at_scale), atol more under the user's.
EvidenceSample fixed_rule_evidence(const Tensor& expected, const Tolerance& tolerance, bool user) {
  EvidenceSample sample{INFINITY, -INFINITY, 0.0, 0.0};
  for (int64_t i = 0; i < expected.size(); ++i) {
    const double value = expected.value_as_double(i);
    if (!std::isfinite(value)) continue;
    sample.low = std::min(sample.low, value);
    sample.high = std::max(sample.high, value);
    sample.scale = std::max(sample.scale, std::fabs(value));
  }
  if (sample.low > sample.high) sample.low = sample.high = 0.0;
  sample.budget = (user ? tolerance.atol : 0.0) + tolerance.rtol * sample.scale;
  return sample;
}

// Compares one output under the rule that applies to it: exactly for integers, bools and strings;
// the user's tolerance when given; the calibrated rule when the case carries a float64 reference
// of it; the pooled rule when other cases do; else the fixed defaults.
void compare_row(const ReferenceCase& c, std::size_t index, const Tensor& actual, const ParityOptions& options,
                 const NoiseByOutput& noise, ParityRow& row) {
  const Tensor& expected = c.outputs[index].tensor;
  const bool narrower = options.precision != DType::undefined && is_floating(expected.dtype()) &&
                        dtype_size(options.precision) < dtype_size(expected.dtype());
  row.tolerance = options.tolerance.resolve(row.output, narrower ? options.precision : expected.dtype());
  const Tensor* exact = exact_output(c, c.outputs[index].name, index);
  const bool complex = expected.dtype() == DType::complex64 || expected.dtype() == DType::complex128;
  if (!is_floating(expected.dtype()) && !complex) {
    row.rule = ToleranceRule::exact;
  } else if (options.tolerance.overridden(row.output)) {
    row.rule = ToleranceRule::user;
  } else if (exact && exact_applies(expected, *exact)) {
    row.rule = ToleranceRule::calibrated;
  } else if (noise.contains(output_key(c, index))) {
    row.rule = ToleranceRule::pooled;
  }
  const bool class_scores = is_class_scores(row.output, expected.shape());
  if (row.rule != ToleranceRule::calibrated && row.rule != ToleranceRule::pooled) {
    row.comparison = options.tolerance.compare(row.output, expected, actual,
                                               narrower ? options.precision : expected.dtype());
    if (class_scores) row.argmax = check_argmax(expected, actual);
    if (!complex && row.rule != ToleranceRule::exact) {
      row.evidence = fixed_rule_evidence(expected, row.tolerance, row.rule == ToleranceRule::user);
    }
    return;
  }
  const double pooled = noise.at(output_key(c, index));
  ExactDeviation deviation;
  row.comparison = row.rule == ToleranceRule::calibrated
                       ? compare_calibrated(expected, *exact, actual, pooled, deviation, options.precision)
                       : compare_pooled(expected, actual, pooled, deviation, options.precision);
  row.exact = deviation;
  row.evidence = EvidenceSample{deviation.low, deviation.high, deviation.scale, deviation.budget};
  // Without the case's own float64 run, PyTorch's output judges the margin, its noise estimated.
  if (class_scores) {
    row.argmax = check_argmax(expected, actual,
                              ArgmaxNoise{exact && row.rule == ToleranceRule::calibrated ? *exact : expected,
                                          deviation.pytorch, deviation.onnx});
  }
}

// `cases`: the reference's cases this variant runs, in order.
void run_variant(Session& session, const Variant& variant, const Reference& reference,
                 const std::vector<const ReferenceCase*>& cases, const ParityOptions& options,
                 const NoiseByOutput& noise, ParityResult& result, PredictionMap& predictions) {
  const std::size_t total = cases.size();
  const std::size_t step = std::max<std::size_t>(1, total / 10);  // at most about ten lines per variant
  std::size_t done = 0;
  for (const ReferenceCase* case_pointer : cases) {
    const ReferenceCase& c = *case_pointer;
    if (options.progress && (done % step == 0 || done + 1 == total)) {
      *options.progress << fmt::format("onnxproof parity: {}, optimizations {}: case {}/{}\n", variant.provider,
                                       optimization_name(variant.level), done + 1, total)
                        << std::flush;
    }
    ++done;
    ParityRow base;
    base.data_set = c.data_set;
    base.sizes = c.sizes;
    base.provider = variant.provider;
    base.optimization = variant.level;
    if (const auto conflict = fixed_dimension_conflict(session, c)) {
      ParityRow row = base;
      row.status = RowStatus::rejected;
      row.note = *conflict;
      result.rows.push_back(row);
      continue;
    }
    auto outputs = run_case(session, c);
    if (!outputs) {
      ParityRow row = base;
      row.status = outputs.error().code() == ErrorCode::runtime ? RowStatus::rejected : RowStatus::error;
      row.note = outputs.error().describe();
      result.rows.push_back(row);
      continue;
    }
    std::vector<std::string> names;
    for (const auto& output : session.outputs()) names.push_back(output.name);
    detail::compare_detection_sets(reference, c, names, *outputs, base, options, result.detections);
    for (std::size_t k = 0; k < outputs->size(); ++k) {
      const auto& name = session.outputs()[k].name;
      if (detail::in_detection_set(reference, name)) continue;  // compared as a set above
      const Tensor& actual = (*outputs)[k];
      ParityRow row = base;
      row.output = name;
      row.actual_shape = format_shape(actual.shape());
      row.actual_dtype = dtype_name(actual.dtype());
      const NamedTensor* expected = expected_output(c, name, k);
      if (!expected) {
        row.status = RowStatus::error;
        row.note = "the reference has no output named '" + name + "'";
        result.rows.push_back(row);
        continue;
      }
      row.expected_shape = format_shape(expected->tensor.shape());
      row.expected_dtype = dtype_name(expected->tensor.dtype());
      if (reference.random_outputs.contains(name)) {
        // Other numbers by construction: only the shape, dtype and domain can be checked.
        row.rule = ToleranceRule::domain;
        row.comparison = compare_domain(expected->tensor, actual);
      } else {
        compare_row(c, static_cast<std::size_t>(expected - c.outputs.data()), actual, options, noise, row);
        row.silent = detect_silent_signs(expected->tensor, actual);
      }
      if (row.comparison.worst_index >= 0) row.worst_at = format_index(row.comparison.worst_index, actual.shape());
      row.status = row.comparison.allclose && (!row.argmax || row.argmax->flips == 0) ? RowStatus::pass : RowStatus::fail;
      if (c.labels && variant.level == GraphOptimization::all) {
        predictions[{variant.provider, name, c.data_set}] = {argmax_rows(expected->tensor), argmax_rows(actual)};
      }
      result.rows.push_back(std::move(row));
    }
    if (options.keep_cpu_outputs && variant.provider == "cpu" && variant.level == GraphOptimization::all) {
      result.cpu_outputs[c.data_set] = std::move(*outputs);  // kept for golden (ParityResult::cpu_outputs)
      if (result.cpu_output_names.empty()) {
        for (const auto& value : session.inputs()) result.cpu_input_names.push_back(value.name);
        for (const auto& value : session.outputs()) result.cpu_output_names.push_back(value.name);
      }
    }
  }
}

// PyTorch's outputs that the model does not produce: an output lost in export would otherwise
// go unnoticed, since rows are made from the model's outputs.
void add_missing_output_findings(const Session& session, const Reference& reference, ParityResult& result) {
  std::set<std::string> missing;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const std::string& name = c.outputs[k].name;
      const bool produced = name.empty() ? k < session.outputs().size()
                                         : std::any_of(session.outputs().begin(), session.outputs().end(),
                                                       [&](const SessionValue& v) { return v.name == name; });
      if (!produced) missing.insert(name.empty() ? "output " + std::to_string(k) : name);
    }
  }
  for (const auto& name : missing) {
    result.findings.push_back({FindingCode::output_missing, Severity::error, "parity",
                               "the reference has output '" + name + "', which the model does not produce", name,
                               "the export lost an output: compare the model's outputs with forward()'s return value"});
  }
}

// What findings group rows by: one finding per provider, optimization level and output.
// Ordered by the level's name, so findings keep the report's order ("all" before "disabled").
struct RowKey {
  std::string provider;
  GraphOptimization optimization;
  std::string output;
  bool operator<(const RowKey& other) const {
    return std::tuple(provider, optimization_name(optimization), output) <
           std::tuple(other.provider, optimization_name(other.optimization), other.output);
  }
};

RowKey key_of(const ParityRow& row) { return {row.provider, row.optimization, row.output}; }

// The same provider and output at another optimization level.
RowKey at_level(const ParityRow& row, GraphOptimization level) { return {row.provider, level, row.output}; }

// The parity rows grouped the way findings report them: by (provider, optimization, output), and
// refused or failed runs by sizes (the model's problem, whatever the provider).
struct RowGroups {
  std::map<RowKey, std::vector<const ParityRow*>> failed;
  std::map<RowKey, std::vector<const ParityRow*>> flipped;
  std::map<RowKey, std::vector<const ParityRow*>> nan_rows;
  std::map<RowKey, std::vector<const ParityRow*>> zero_rows;       // failed, all zeros where PyTorch's is not
  std::map<RowKey, std::vector<const ParityRow*>> saturated_rows;  // failed, saturated where PyTorch's is not
  std::map<std::pair<std::string, std::string_view>, const ParityRow*> rejected;  // (sizes, status name)
  std::set<std::pair<std::string, std::string>> disabled_passes;  // (data_set, output) that match unoptimized
};

RowGroups group_rows(const ParityResult& result) {
  RowGroups groups;
  for (const auto& row : result.rows) {
    const RowKey key = key_of(row);
    if (!row.compared()) {
      groups.rejected.emplace(std::pair(describe_sizes(row.sizes), row_status_name(row.status)), &row);
      continue;
    }
    if (!row.comparison.allclose) groups.failed[key].push_back(&row);
    if (row.argmax && row.argmax->flips > 0) groups.flipped[key].push_back(&row);
    if (row.comparison.nan_mismatches > 0) groups.nan_rows[key].push_back(&row);
    // Zeros and saturation count only where the comparison failed: a tiny true answer that
    // ONNX Runtime rounds to zero within the budget is no silent failure.
    if (!row.comparison.allclose && row.silent.all_zeros) groups.zero_rows[key].push_back(&row);
    if (!row.comparison.allclose && row.silent.saturated > 0) groups.saturated_rows[key].push_back(&row);
    if (row.optimization == GraphOptimization::disabled && row.status == RowStatus::pass)
      groups.disabled_passes.emplace(row.data_set, row.output);
  }
  return groups;
}

// The row that misses by most: a shape difference first, then the largest error for its budget
// (calibrated rows) or the largest absolute difference.
const ParityRow* worst_row(const std::vector<const ParityRow*>& rows) {
  const auto badness = [](const ParityRow* row) -> double {
    if (!row->comparison.shape_match || !row->comparison.dtype_match) return INFINITY;
    if (row->exact) return row->exact->budget > 0.0 ? row->exact->onnx / row->exact->budget : INFINITY;
    return row->comparison.max_abs;
  };
  const ParityRow* worst = rows.front();
  for (const auto* row : rows) {
    if (badness(row) > badness(worst)) worst = row;
  }
  return worst;
}

std::string format_ratio(const ExactDeviation& deviation) {
  const auto ratio = deviation.ratio();
  return ratio ? fmt::format("{:.3g}x as far from the exact (float64) answer as PyTorch float32 is", *ratio)
               : std::string("off the exact (float64) answer where PyTorch float32 is exact");
}

std::string calibrated_miss_message(const ParityRow& worst, std::size_t failed_cases, std::size_t cases) {
  const auto& d = *worst.exact;
  const auto& cmp = worst.comparison;
  // NaN/Inf positions carry no distance: said apart (NAN_OR_INF has them too).
  const std::string nan = cmp.nan_mismatches ? fmt::format(", {} of them NaN/Inf where the other side is not", cmp.nan_mismatches) : "";
  if (cmp.mismatches == cmp.nan_mismatches) {  // no finite value over the budget: distances say nothing
    return fmt::format("output '{}' on {} ({} optimizations) has NaN/Inf where PyTorch's is finite (or the reverse) "
                       "in {} of {} cases; worst {} ({}): {} of {} elements, first at {}",
                       worst.output, worst.provider, optimization_name(worst.optimization), failed_cases, cases,
                       worst.data_set, describe_sizes(worst.sizes), cmp.nan_mismatches, cmp.elements,
                       worst.worst_at.empty() ? "-" : worst.worst_at);
  }
  return fmt::format(
      "output '{}' on {} ({} optimizations) is {} in {} of {} cases; worst {} ({}): max |ONNX - exact| {:.3g} "
      "over finite values, PyTorch's {:.3g}, budget {:.3g} ({:g}x PyTorch's noise + {:g} epsilons of the scale "
      "{:.3g}); {} of {} elements over it{}, worst at {}",
      worst.output, worst.provider, optimization_name(worst.optimization), format_ratio(d), failed_cases, cases, worst.data_set,
      describe_sizes(worst.sizes), d.onnx, d.pytorch, d.budget, k_noise_multiple, k_floor_epsilons, d.scale,
      cmp.mismatches, cmp.elements, nan, worst.worst_at.empty() ? "-" : worst.worst_at);
}

// One PARITY_MISMATCH per (provider, optimization, output) that failed, naming the worst case.
void add_mismatch_findings(const Reference& reference, const RowGroups& groups, ParityResult& result) {
  const auto& failed = groups.failed;
  const auto& disabled_passes = groups.disabled_passes;
  for (const auto& [key, rows] : failed) {
    // A miss that shows with optimizations on and off is one problem: report it once, on "all".
    const ParityRow* first = rows.front();
    if (first->optimization == GraphOptimization::disabled && failed.contains(at_level(*first, GraphOptimization::all)))
      continue;
    const bool also_disabled = first->optimization == GraphOptimization::all &&
                               failed.contains(at_level(*first, GraphOptimization::disabled));
    const ParityRow* worst = worst_row(rows);
    const auto& cmp = worst->comparison;
    std::string message;
    if (worst->exact && cmp.shape_match && cmp.dtype_match) {
      message = calibrated_miss_message(*worst, rows.size(), reference.cases.size());
    } else if (worst->rule == ToleranceRule::exact && cmp.shape_match && cmp.dtype_match) {
      message = fmt::format(
          "output '{}' on {} ({} optimizations) differs from PyTorch's {} values (compared exactly) in {} of {} "
          "cases; worst {} ({}): {} of {} elements, largest difference {:.6g}, worst at {}",
          worst->output, worst->provider, optimization_name(worst->optimization), worst->expected_dtype, rows.size(),
          reference.cases.size(), worst->data_set, describe_sizes(worst->sizes), cmp.mismatches, cmp.elements,
          cmp.max_abs, worst->worst_at.empty() ? "-" : worst->worst_at);
    } else if (!cmp.shape_match || !cmp.dtype_match) {
      // Both shape and dtype: a dtype difference alone read "PyTorch gives 2x8 but ONNX Runtime 2x8".
      message =
          fmt::format("output '{}' on {} ({} optimizations): PyTorch gives {} {} but ONNX Runtime {} {} in {} ({})",
                      worst->output, worst->provider, optimization_name(worst->optimization), worst->expected_shape, worst->expected_dtype,
                      worst->actual_shape, worst->actual_dtype, worst->data_set, describe_sizes(worst->sizes));
    } else {
      message = fmt::format(
          "output '{}' on {} ({} optimizations) misses rtol {:g} / atol {:g} in {} of {} cases; worst {} ({}): "
          "{} of {} elements ({:.3g}%), max abs {:.3g}, max rel {:.3g}, worst at {}",
          worst->output, worst->provider, optimization_name(worst->optimization), worst->tolerance.rtol, worst->tolerance.atol,
          rows.size(), reference.cases.size(), worst->data_set, describe_sizes(worst->sizes), cmp.mismatches,
          cmp.elements,
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
    result.findings.push_back({FindingCode::parity_mismatch,
                               Severity::error,
                               "parity",
                               message,
                               worst->output,
                               hint,
                               {.sizes = worst->sizes}});
  }
}

void add_flip_findings(const RowGroups& groups, ParityResult& result) {
  const auto& flipped = groups.flipped;
  for (const auto& [key, rows] : flipped) {
    int64_t flips = 0;
    int64_t total = 0;
    double margin = rows.front()->argmax->min_margin;
    for (const auto* row : rows) {
      flips += row->argmax->flips;
      total += row->argmax->rows;
      margin = std::min(margin, row->argmax->min_margin);
    }
    const auto* first = rows.front();
    result.findings.push_back(
        {FindingCode::argmax_flip, Severity::error, "parity",
         fmt::format("output '{}' on {} ({} optimizations): {} of {} rows predict another class than PyTorch "
                     "(smallest {} margin among them {:.3g}{}); first in {} row {}",
                     first->output, first->provider, optimization_name(first->optimization), flips, total,
                     first->exact ? "exact (float64)" : "PyTorch", margin,
                     first->exact ? ", larger than both sides' float noise" : "", first->data_set,
                     first->argmax->first_flip_row),
         first->output,
         first->exact ? "the class changes by more than float noise explains: find where ONNX Runtime departs "
                        "from PyTorch (the localization below, or onnxproof localize)"
                      : "close logits near a tie flip; check the numeric drift above, or accept it with a "
                        "documented tolerance"});
  }
}

// Argmax differences inside the float noise, one info line per output: no flip, said.
void add_tie_findings(const ParityResult& result, std::vector<Finding>& findings) {
  std::map<std::string, std::pair<int64_t, int64_t>> ties;  // output -> (tied rows, rows)
  for (const auto& row : result.rows) {
    if (row.optimization != GraphOptimization::all || !row.argmax || row.argmax->ties == 0) continue;
    auto& [tied, total] = ties[row.output + " on " + row.provider];
    tied += row.argmax->ties;
    total += row.argmax->rows;
  }
  for (const auto& [where, counts] : ties) {
    findings.push_back({FindingCode::argmax_tie, Severity::info, "parity",
                        fmt::format("output {}: {} of {} rows pick another class than PyTorch where the two classes "
                                    "are tied within float noise (not counted as flips)",
                                    where, counts.first, counts.second),
                        where.substr(0, where.find(" on ")), ""});
  }
}

// Output -> the largest change between cases of one output shape (inputs differ between cases):
// the exact values where the case has them, else PyTorch's. Outputs with no two cases of one
// shape are absent.
std::map<std::string, double> input_effects(const Reference& reference) {
  std::map<std::string, double> effects;
  std::map<std::pair<std::string, std::vector<int64_t>>, const Tensor*> first_of_shape;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const Tensor* exact = exact_output(c, c.outputs[k].name, k);
      const Tensor& values = exact ? *exact : c.outputs[k].tensor;
      if (!is_floating(values.dtype())) continue;
      const auto [first, inserted] = first_of_shape.try_emplace({output_key(c, k), values.shape()}, &values);
      if (inserted) continue;
      double change = 0.0;
      for (int64_t i = 0; i < values.size(); ++i) {
        const double delta = std::fabs(values.value_as_double(i) - first->second->value_as_double(i));
        if (std::isfinite(delta)) change = std::max(change, delta);
      }
      effects[c.outputs[k].name] = std::max(effects[c.outputs[k].name], change);
    }
  }
  return effects;
}

// EVIDENCE_WEAK for each floating output that passed on evidence too weak to see a plausible bug.
void add_evidence_findings(const Reference& reference, const ParityResult& result, std::vector<Finding>& findings) {
  const auto effects = input_effects(reference);
  std::map<std::string, std::vector<EvidenceSample>> samples;
  std::set<std::string> failed;
  for (const auto& row : result.rows) {
    if (!row.compared()) continue;
    if (row.status == RowStatus::fail) failed.insert(row.output);
    if (row.optimization == GraphOptimization::all && row.evidence) samples[row.output].push_back(*row.evidence);
  }
  for (const auto& [output, evidence] : samples) {
    if (failed.contains(output)) continue;  // the comparison saw a problem: it was not blind
    const auto effect = effects.find(output);
    const std::string reason =
        weak_evidence_reason(evidence, effect == effects.end() ? std::nullopt : std::optional(effect->second));
    if (reason.empty()) continue;
    findings.push_back({FindingCode::evidence_weak, Severity::warning, "parity",
                        fmt::format("output '{}' passed on weak evidence: {}", output, reason), output,
                        "prove on real data (--data) or trained weights so the output carries signal; a random-weight "
                        "model whose activations vanish proves little"});
  }
}

// A silent-failure finding whose first node a later run of the intermediates may name.
struct LocateRequest {
  std::size_t finding = 0;  // index into ParityResult::findings
  const ParityRow* row = nullptr;
  SilentSign sign = SilentSign::non_finite;
};

void add_nan_findings(const RowGroups& groups, ParityResult& result, std::vector<LocateRequest>& requests) {
  const auto& nan_rows = groups.nan_rows;
  for (const auto& [key, rows] : nan_rows) {
    const auto* first = rows.front();
    // One finding per output and provider: the disabled level's only when "all" has none.
    if (first->optimization == GraphOptimization::disabled &&
        nan_rows.contains(at_level(*first, GraphOptimization::all)))
      continue;
    int64_t positions = 0;
    for (const auto* row : rows) positions += row->comparison.nan_mismatches;
    const auto showing = std::find_if(rows.begin(), rows.end(), [](const ParityRow* row) { return row->silent.non_finite > 0; });
    if (showing != rows.end()) requests.push_back({result.findings.size(), *showing, SilentSign::non_finite});
    result.findings.push_back(
        {FindingCode::nan_or_inf, Severity::error, "parity",
         fmt::format("output '{}' on {} ({} optimizations): {} NaN/Inf positions differ from PyTorch's across {} "
                     "cases",
                     first->output, first->provider, optimization_name(first->optimization), positions, rows.size()),
         rows.front()->output, "look for log/div/sqrt of zero or overflow in float16 in one runtime only"});
  }
}

// OUTPUT_ALL_ZEROS and OUTPUT_SATURATED, one per (provider, optimization, output) as NAN_OR_INF.
void add_silent_findings(const Reference& reference, const RowGroups& groups, ParityResult& result,
                         std::vector<LocateRequest>& requests) {
  for (const auto sign : {SilentSign::all_zeros, SilentSign::saturated}) {
    const auto& grouped = sign == SilentSign::all_zeros ? groups.zero_rows : groups.saturated_rows;
    for (const auto& [key, rows] : grouped) {
      const auto* first = rows.front();
      if (first->optimization == GraphOptimization::disabled && grouped.contains(at_level(*first, GraphOptimization::all)))
        continue;
      const std::string where = fmt::format("output '{}' on {} ({} optimizations)", first->output, first->provider,
                                            optimization_name(first->optimization));
      const std::string cases = fmt::format("in {} of {} cases; first {} ({})", rows.size(), reference.cases.size(),
                                            first->data_set, describe_sizes(first->sizes));
      std::string message;
      if (sign == SilentSign::all_zeros) {
        message = fmt::format("{} is all zeros where PyTorch's is not, {}", where, cases);
      } else {
        int64_t elements = 0;
        for (const auto* row : rows) elements += row->silent.saturated;
        message = fmt::format("{} has {} elements at +-{:g} (the largest finite {}) where PyTorch's are not, {}", where,
                              elements, first->silent.saturated_value,
                              first->silent.saturated_value == 65504.0 ? "float16" : first->actual_dtype, cases);
      }
      requests.push_back({result.findings.size(), first, sign});
      const auto code = sign == SilentSign::all_zeros ? FindingCode::output_all_zeros : FindingCode::output_saturated;
      const auto& info = finding_code_info(code);
      result.findings.push_back({code, info.severity, "parity", message, first->output, std::string(info.hint),
                                 {.sizes = first->sizes}});
    }
  }
}

void add_rejected_findings(const Reference& reference, const RowGroups& groups, ParityResult& result) {
  const auto& rejected = groups.rejected;
  // When ONNX Runtime fails at the traced sizes themselves, no shape is to blame: every failure
  // is then RUN_FAILED (the graph cannot run as written), not SHAPE_REJECTED.
  const bool fails_as_traced = std::any_of(rejected.begin(), rejected.end(), [&](const auto& entry) {
    const auto& sizes = entry.second->sizes;
    return entry.second->status == RowStatus::rejected && std::all_of(sizes.begin(), sizes.end(), [&](const auto& size) {
             const auto example = reference.example_sizes.find(size.first);
             return example != reference.example_sizes.end() && example->second == size.second;
           });
  });
  // A case that ran with ONNX Runtime's graph optimizations disabled and fails with them on is
  // not the export's failure as written: one of the optimizer's rewrites cannot run it (measured:
  // ReshapeFusion writing a Reshape's shape as {0,-1}, which no empty tensor can take).
  const auto runs_unoptimized = [&](const ParityRow& failed) {
    if (failed.optimization == GraphOptimization::disabled) return false;
    const bool in_rows = std::any_of(result.rows.begin(), result.rows.end(), [&](const ParityRow& other) {
      return other.optimization == GraphOptimization::disabled && other.data_set == failed.data_set &&
             other.provider == failed.provider && other.compared();
    });
    return in_rows || std::any_of(result.detections.begin(), result.detections.end(), [&](const DetectionRow& other) {
             return other.optimization == GraphOptimization::disabled && other.data_set == failed.data_set &&
                    other.provider == failed.provider && other.note.empty();
           });
  };
  for (const auto& [key, row] : rejected) {
    if (runs_unoptimized(*row)) {
      result.findings.push_back(
          {FindingCode::run_failed, Severity::error, "parity",
           fmt::format("{} on {} with graph optimizations {}: {}", row->data_set, row->provider,
                       optimization_name(row->optimization), row->note),
           row->data_set,
           "ONNX Runtime runs this case with its graph optimizations disabled and fails with them on: one of "
           "its optimizer's rewrites of the node named cannot run it (a Reshape to a shape holding 0 and -1 on an "
           "empty tensor is ReshapeFusion's); a session with default options fails the same way, so deploy with "
           "that optimizer disabled (SessionOptions' disabled_optimizers) or the optimization level that runs "
           "it, or change the model so the node does not take this form, and report it to ONNX Runtime",
           {.sizes = row->sizes}});
      continue;
    }
    const bool refused = row->status == RowStatus::rejected && !fails_as_traced;
    const auto changed = changed_sizes(row->sizes, reference);
    result.findings.push_back(
        {refused ? FindingCode::shape_rejected : FindingCode::run_failed,
         Severity::error,
         "parity",
         refused ? fmt::format("ONNX Runtime refuses {} ({}): {}", describe_sizes(changed), row->data_set, row->note)
                 : fmt::format("{} on {}: {}", row->data_set, row->provider, row->note),
         row->data_set,
         refused ? "the model does not accept a shape production sends: export with that axis dynamic (--dynamic) and "
                   "without Python ints taken from shapes"
         : fails_as_traced ? "ONNX Runtime cannot run the graph even at the sizes it was traced at: the node "
                             "named fails as the exporter wrote it; try another --opset or --exporter"
                           : "",
         {.sizes = refused ? changed : row->sizes}});
  }
}

// RANDOM_OUTPUT: one warning naming the outputs a random operator feeds, left unproved by value.
void add_random_findings(const Reference& reference, const ParityResult& result, std::vector<Finding>& findings) {
  std::vector<std::string> named;
  for (const auto& [output, cause] : reference.random_outputs) {
    const bool compared = std::any_of(result.rows.begin(), result.rows.end(),
                                      [&](const ParityRow& row) { return row.output == output && row.compared(); });
    if (compared) named.push_back(fmt::format("'{}' ({})", output, cause));
  }
  if (named.empty()) return;
  findings.push_back({FindingCode::random_output, Severity::warning, "parity",
                      fmt::format("output(s) {} depend on a random operator: ONNX Runtime and PyTorch draw other numbers "
                                  "by construction, so they were checked for shape, dtype, NaN/Inf and value domain "
                                  "only and are not proved value by value; the other outputs are proved as usual",
                                  fmt::join(named, ", ")),
                      reference.random_outputs.begin()->first,
                      "to prove them, take the random values as an input of the model (sample outside it), or "
                      "check their distribution yourself"});
}

// One finding per (provider, optimization, output) that failed, naming the worst case. Returns the
// silent failures whose first node locate_silent_failures may name.
std::vector<LocateRequest> add_findings(const Reference& reference, ParityResult& result) {
  const RowGroups groups = group_rows(result);
  std::vector<LocateRequest> requests;
  add_mismatch_findings(reference, groups, result);
  add_flip_findings(groups, result);
  add_tie_findings(result, result.findings);
  add_nan_findings(groups, result, requests);
  add_silent_findings(reference, groups, result, requests);
  add_rejected_findings(reference, groups, result);
  add_evidence_findings(reference, result, result.findings);
  add_random_findings(reference, result, result.findings);
  detail::add_detection_findings(result, result.findings);
  return requests;
}

// The first node whose output shows each silent failure, from one run of the case with every
// intermediate value as an output (on the provider and level that showed it), added to the
// finding's message. A copy that cannot run says so instead: the finding stands either way.
void locate_silent_failures(const fs::path& model, const Reference& reference, const ParityOptions& options,
                            const std::vector<LocateRequest>& requests, ParityResult& result) {
  constexpr std::size_t k_most_runs = 8;  // one run of the whole graph each: bounded
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& request = requests[i];
    Finding& finding = result.findings[request.finding];
    if (i >= k_most_runs) {
      finding.message += "; first node not located (more than 8 silent failures)";
      continue;
    }
    const ReferenceCase* c = find_case(reference, request.row->data_set);
    if (!c) continue;
    const auto located = find_first_node_showing(model, *c,
                                                 SessionOptions{.provider = request.row->provider,
                                                                .optimization = request.row->optimization,
                                                                .intra_op_threads = options.intra_op_threads},
                                                 request.sign);
    if (!located) {
      finding.message += "; the first node could not be located: " + located.error().describe();
    } else if (*located) {
      const FirstNode& node = **located;
      finding.message += fmt::format("; first node whose output is {}: '{}' ({}), value '{}' ({})",
                                     silent_sign_name(request.sign), node.node, node.op_type, node.value,
                                     request.row->data_set);
    } else {
      finding.message += fmt::format("; no intermediate value is {} by itself in {}", silent_sign_name(request.sign),
                                     request.row->data_set);
    }
  }
}

void add_accuracy(const Reference& reference, const ParityOptions& options, ParityResult& result,
                  const PredictionMap& predictions) {
  std::map<std::string, TaskAccuracy> by_output;
  std::map<std::string, std::map<std::string, int64_t>> correct;  // output -> who -> count
  for (const auto& c : reference.cases) {
    if (!c.labels) continue;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < c.labels->size(); ++i) labels.push_back(static_cast<int64_t>(c.labels->value_as_double(i)));
    for (const auto& [key, rows] : predictions) {
      if (key.data_set != c.data_set || rows.pytorch.size() != labels.size()) continue;
      auto& accuracy = by_output[key.output];
      accuracy.output = key.output;
      const bool first_provider = key.provider == options.providers.front();
      if (first_provider) accuracy.samples += static_cast<int64_t>(labels.size());
      for (std::size_t i = 0; i < labels.size(); ++i) {
        correct[key.output][key.provider] += rows.onnxruntime[i] == labels[i];
        if (first_provider) {
          correct[key.output]["pytorch"] += rows.pytorch[i] == labels[i];
          accuracy.flipped += rows.pytorch[i] != rows.onnxruntime[i];
        }
      }
    }
  }
  for (auto& [output, accuracy] : by_output) {
    if (accuracy.samples == 0) continue;
    for (const auto& [who, count] : correct[output]) {
      accuracy.accuracy[who] = static_cast<double>(count) / static_cast<double>(accuracy.samples);
    }
    result.accuracy.push_back(accuracy);
  }
}

}  // namespace

Expected<std::vector<Tensor>> run_case(Session& session, const ReferenceCase& c) {
  std::vector<Feed> feeds;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    std::string name = c.inputs[i].name;
    if (name.empty() && i < session.inputs().size()) name = session.inputs()[i].name;
    feeds.push_back({name, &c.inputs[i].tensor});
  }
  return session.run(feeds);
}

bool ParityResult::passed() const {
  const bool all_ran = std::all_of(providers.begin(), providers.end(), [](const ProviderStatus& p) { return p.ran; });
  return all_ran && !providers.empty() && !has_errors(findings);
}

const ProviderStatus* ParityResult::provider_not_run() const {
  const auto it = std::find_if(providers.begin(), providers.end(), [](const ProviderStatus& p) { return !p.ran; });
  return it == providers.end() ? nullptr : &*it;
}

std::string format_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    if (shape[axis] > 0) {
      index[axis] = flat % shape[axis];
      flat /= shape[axis];
    }
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

Expected<std::vector<NodePlacement>> measure_placements(const fs::path& model, const ReferenceCase& c,
                                                        const SessionOptions& options) {
  static std::atomic<int> counter{0};
  SessionOptions profiled = options;
  profiled.profile_prefix = fs::temp_directory_path() / fmt::format("onnxproof-profile-{}-{}", ::getpid(), counter++);
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open(model, profiled));
  const auto ran = run_case(session, c);
  ONNXPROOF_TRY_ASSIGN(const fs::path profile, session.end_profiling());
  auto placements = read_profile_placements(profile);
  std::error_code ec;
  fs::remove(profile, ec);
  if (!ran) return std::unexpected(ran.error());
  return placements;
}

std::optional<Finding> fallback_finding(const std::string& provider, const std::vector<NodePlacement>& placements) {
  const auto off = nodes_off_provider(placements, provider);
  if (off.empty()) return std::nullopt;
  constexpr std::size_t k_named = 10;
  std::map<std::string, int> by_provider;
  std::string named;
  for (std::size_t i = 0; i < off.size(); ++i) {
    ++by_provider[off[i].provider];
    if (i < k_named) named += fmt::format("{}'{}' ({}) on {}", named.empty() ? "" : ", ", off[i].node, off[i].op_type, off[i].provider);
  }
  if (off.size() > k_named) named += fmt::format(" and {} more", off.size() - k_named);
  std::string counts;
  for (const auto& [name, count] : by_provider) counts += fmt::format("{}{} on {}", counts.empty() ? "" : ", ", count, name);
  const auto& info = finding_code_info(FindingCode::provider_fallback);
  return Finding{FindingCode::provider_fallback, info.severity, "parity",
                 fmt::format("{} of {} nodes did not run on {} ({}): {}", off.size(), placements.size(), provider, counts, named),
                 provider, std::string(info.hint)};
}

namespace {

// PROVIDER_FALLBACK for a GPU provider, from ONNX Runtime's profile of the first case; when the
// profile cannot be had, from a session that forbids the CPU fallback (it names no nodes).
void add_fallback_findings(const fs::path& model, const Reference& reference, const SessionOptions& session,
                           ParityResult& result) {
  if (!reference.cases.empty()) {
    const auto placements = measure_placements(model, reference.cases.front(), session);
    if (placements) {
      if (auto finding = fallback_finding(session.provider, *placements)) result.findings.push_back(std::move(*finding));
      return;
    }
  }
  SessionOptions strict_options = session;
  strict_options.forbid_cpu_fallback = true;
  if (auto strict = Session::open(model, strict_options); !strict) {
    result.findings.push_back(
        {FindingCode::provider_fallback, Severity::warning, "parity",
         fmt::format("some nodes fall back from {} to the CPU: {}", session.provider, strict.error().describe()),
         session.provider, "the numbers are proved, but the speed is not what the provider promises"});
  }
}

// The cases a variant runs: every case at the default level; with optimizations disabled, only
// those with a row or detection set that did not pass at "all" on that provider (the level tells
// the optimizer's rewrites from the export where something failed; a passing case is proved at
// the level a default session runs; running every case twice was half of the parity step: 2.3 s
// against 1.2 s on ResNet-18).
std::vector<const ReferenceCase*> cases_to_run(const Reference& reference, const Variant& variant,
                                               const ParityResult& result) {
  std::set<std::string> failed;
  if (variant.level == GraphOptimization::disabled) {
    for (const auto& row : result.rows) {
      if (row.provider == variant.provider && row.optimization == GraphOptimization::all && row.status != RowStatus::pass)
        failed.insert(row.data_set);
    }
    for (const auto& row : result.detections) {
      if (row.provider == variant.provider && row.optimization == GraphOptimization::all && !row.passed)
        failed.insert(row.data_set);
    }
  }
  std::vector<const ReferenceCase*> cases;
  for (const auto& c : reference.cases) {
    if (variant.level != GraphOptimization::disabled || failed.contains(c.data_set)) cases.push_back(&c);
  }
  return cases;
}

}  // namespace

Expected<ParityResult> run_parity(const fs::path& model, const Reference& reference, const ParityOptions& options) {
  if (!fs::exists(model)) return fail(ErrorCode::not_found, "no such file: " + model.string());
  // A NaN tolerance would turn every miss into a pass: refused here, whoever calls.
  ONNXPROOF_TRY(options.tolerance.validate());
  ParityResult result;
  PredictionMap predictions;
  const NoiseByOutput noise = pooled_relative_noise(reference);
  for (const auto& provider : options.providers) {
    std::vector<Variant> variants = {{provider, GraphOptimization::all}};
    if (options.compare_optimization_off && provider == options.providers.front()) {
      variants.push_back({provider, GraphOptimization::disabled});
    }
    ProviderStatus status{provider, false, ""};
    for (const auto& variant : variants) {
      const auto cases = cases_to_run(reference, variant, result);
      if (cases.empty() && variant.level == GraphOptimization::disabled) continue;
      const SessionOptions session_options{.provider = provider,
                                           .optimization = variant.level,
                                           .intra_op_threads = options.intra_op_threads,
                                           .tensorrt_cache = options.tensorrt_cache,
                                           .tensorrt_fp16 = options.precision == DType::float16};
      auto session = Session::open(model, session_options);
      if (!session) {
        if (session.error().code() == ErrorCode::not_found || session.error().code() == ErrorCode::unsupported) {
          status.reason = session.error().describe();  // the provider, not the model
        } else {
          result.findings.push_back(
              {FindingCode::run_failed, Severity::error, "parity", session.error().describe(), model.string(),
               "ONNX Runtime cannot load the model; run `onnxproof check` and `onnxproof ops` on it"});
          status.ran = true;
        }
        break;
      }
      if (provider != "cpu" && variant.level == GraphOptimization::all) {
        add_fallback_findings(model, reference, session_options, result);
      }
      status.ran = true;
      if (provider == options.providers.front() && variant.level == GraphOptimization::all) {
        // A per-output tolerance for a name the model lacks is a typo that would prove nothing.
        for (const auto& [name, tolerance] : options.tolerance.per_output) {
          const bool known = std::any_of(session->outputs().begin(), session->outputs().end(),
                                         [&](const SessionValue& v) { return v.name == name; });
          if (!known) {
            std::string names;
            for (const auto& v : session->outputs()) names += (names.empty() ? "" : ", ") + v.name;
            return fail(ErrorCode::usage, "--output-tolerance names '" + name +
                                              "', which is not an output of the model (outputs: " + names + ")");
          }
        }
        add_missing_output_findings(*session, reference, result);
      }
      run_variant(*session, variant, reference, cases, options, noise, result, predictions);
    }
    result.providers.push_back(status);
  }
  const auto requests = add_findings(reference, result);
  locate_silent_failures(model, reference, options, requests, result);
  add_accuracy(reference, options, result, predictions);
  return result;
}

}  // namespace onnxproof
