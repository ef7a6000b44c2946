#include "onnxproof/parity/parity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "analyzers/analyzer.h"
#include "detection_parity.h"
#include "onnxproof/core/name_table.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/runtime/session.h"
#include "provider_fallback.h"
#include "provider_runs.h"
#include "quantized_rows.h"

namespace onnxproof {
namespace fs = std::filesystem;
using parity_analyzers::output_key;

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

// Per output (its name, or "#k" for an unnamed one), over the cases: PyTorch's median noise
// relative to the output's scale (from the cases with a float64 run), and the median scale.
struct PooledNoise {
  double relative = 0.0;
  double scale = 0.0;
};
using NoiseByOutput = std::map<std::string, PooledNoise>;
using OutputGrids = detail::QuantizedOutputs;

double median(std::vector<double>& values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

NoiseByOutput pooled_relative_noise(const Reference& reference) {
  std::map<std::string, std::vector<double>> samples, scales;
  for (const auto& c : reference.cases) {
    for (std::size_t k = 0; k < c.outputs.size() && k < c.exact_outputs.size(); ++k) {
      if (!c.exact_outputs[k]) continue;
      samples[output_key(c, k)].push_back(relative_noise(c.outputs[k].tensor, *c.exact_outputs[k]));
      scales[output_key(c, k)].push_back(finite_scale(c.outputs[k].tensor));
    }
  }
  NoiseByOutput pooled;
  for (auto& [name, values] : samples) pooled[name] = {median(values), median(scales[name])};
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
// the user's tolerance when given; in quantization steps when a DequantizeLinear makes it; the calibrated rule when the
// case carries a float64 reference of it; the pooled rule when other cases do; else the fixed defaults.
void compare_row(const ReferenceCase& c, std::size_t index, const Tensor& actual, const ParityOptions& options,
                 const NoiseByOutput& noise, const OutputGrids& grids, ParityRow& row) {
  const Tensor& expected = c.outputs[index].tensor;
  const bool narrower = options.precision != DType::undefined && is_floating(expected.dtype()) &&
                        dtype_size(options.precision) < dtype_size(expected.dtype());
  row.tolerance = options.tolerance.resolve(row.output, narrower ? options.precision : expected.dtype());
  const Tensor* exact = exact_output(c, c.outputs[index].name, index);
  const bool complex = expected.dtype() == DType::complex64 || expected.dtype() == DType::complex128;
  if (!options.tolerance.overridden(row.output) && detail::compare_in_steps(c, index, actual, grids, row)) return;
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
    row.comparison =
        options.tolerance.compare(row.output, expected, actual, narrower ? options.precision : expected.dtype());
    if (class_scores) row.argmax = check_argmax(expected, actual);
    if (!complex && row.rule != ToleranceRule::exact) {
      row.evidence = fixed_rule_evidence(expected, row.tolerance, row.rule == ToleranceRule::user);
    }
    return;
  }
  const PooledNoise pooled = noise.at(output_key(c, index));
  ExactDeviation deviation;
  row.comparison =
      row.rule == ToleranceRule::calibrated
          ? compare_calibrated(expected, *exact, actual, pooled.relative, deviation, options.precision, pooled.scale)
          : compare_pooled(expected, actual, pooled.relative, deviation, options.precision, pooled.scale);
  row.exact = deviation;
  row.evidence = EvidenceSample{deviation.low, deviation.high, deviation.scale, deviation.budget};
  // Without the case's own float64 run, PyTorch's output judges the margin, its noise estimated.
  // ONNX Runtime's noise is its deviation only up to the budget a correct export stays within: a
  // wrong export's own error is no noise, and would file its flips as ties.
  if (class_scores) {
    row.argmax = check_argmax(expected, actual,
                              ArgmaxNoise{exact && row.rule == ToleranceRule::calibrated ? *exact : expected,
                                          deviation.pytorch, std::min(deviation.onnx, deviation.budget)});
  }
}

// What every row of case `c` on `variant` says before its comparison.
ParityRow row_base(const ReferenceCase& c, const Variant& variant, const Session& session) {
  ParityRow base;
  base.data_set = c.data_set;
  base.sizes = c.sizes;
  base.provider = variant.provider;
  base.optimization = variant.level;
  base.precision = session.precision();
  return base;
}

// `cases`: the reference's cases this variant runs, in order.
void run_variant(Session& session, const Variant& variant, const Reference& reference,
                 const std::vector<const ReferenceCase*>& cases, const ParityOptions& options,
                 const NoiseByOutput& noise, const OutputGrids& grids, ParityResult& result,
                 PredictionMap& predictions) {
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
    const ParityRow base = row_base(c, variant, session);
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
        compare_row(c, static_cast<std::size_t>(expected - c.outputs.data()), actual, options, noise, grids, row);
        row.silent = detect_silent_signs(expected->tensor, actual);
      }
      if (row.comparison.worst_index >= 0) row.worst_at = format_index(row.comparison.worst_index, actual.shape());
      row.status =
          row.comparison.allclose && (!row.argmax || row.argmax->flips == 0) ? RowStatus::pass : RowStatus::fail;
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
                                         : std::any_of(
                                               session.outputs().begin(), session.outputs().end(),
                                               [&](const SessionValue& v) { return v.name == name; });
      if (!produced) missing.insert(name.empty() ? "output " + std::to_string(k) : name);
    }
  }
  for (const auto& name : missing) {
    result.findings.push_back(
        {FindingCode::output_missing, Severity::error, "parity",
         "the reference has output '" + name + "', which the model does not produce", name,
         fmt::format("the export lost an output: compare the model's outputs with {}'s return value",
                     module_call(result.framework))});
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
          correct[key.output]["source"] += rows.pytorch[i] == labels[i];
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
  const bool all_ran =
      std::all_of(providers.begin(), providers.end(), [](const ProviderStatus& p) { return p.ran || p.advisory; });
  return all_ran && !providers.empty() && !has_errors(findings);
}

bool ParityResult::advisory(const std::string& provider) const {
  return std::any_of(providers.begin(), providers.end(),
                     [&](const ProviderStatus& p) { return p.provider == provider && p.advisory; });
}

const ProviderStatus* ParityResult::provider_not_run() const {
  // Advisory rows that could not run say why in their status; they never leave a proof undone.
  const auto it =
      std::find_if(providers.begin(), providers.end(), [](const ProviderStatus& p) { return !p.ran && !p.advisory; });
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

namespace {

// The cases a variant runs: every case at the default level; with optimizations disabled, those
// with a row or detection set that did not pass at "all" on that provider (the level tells the
// optimizer's rewrites from the export where something failed; a passing case is proved at the
// level a default session runs; running every case twice was half of the parity step: 2.3 s
// against 1.2 s on ResNet-18), and every case of a quantized model (its export is judged there
// without the fused kernels' own rounding: quantize/steps.h).
std::vector<const ReferenceCase*> cases_to_run(const Reference& reference, const Variant& variant,
                                               const ParityResult& result, bool quantized) {
  std::set<std::string> failed;
  if (variant.level == GraphOptimization::disabled) {
    for (const auto& row : result.rows) {
      if (row.provider == variant.provider && row.optimization == GraphOptimization::all &&
          row.status != RowStatus::pass)
        failed.insert(row.data_set);
    }
    for (const auto& row : result.detections) {
      if (row.provider == variant.provider && row.optimization == GraphOptimization::all && !row.passed)
        failed.insert(row.data_set);
    }
  }
  std::vector<const ReferenceCase*> cases;
  for (const auto& c : reference.cases) {
    if (variant.level != GraphOptimization::disabled || quantized || failed.contains(c.data_set)) cases.push_back(&c);
  }
  return cases;
}

}  // namespace

Expected<ParityResult> run_parity(const fs::path& model, const Reference& reference, const ParityOptions& options) {
  if (!fs::exists(model)) return fail(ErrorCode::not_found, "no such file: " + model.string());
  // A NaN tolerance would turn every miss into a pass: refused here, whoever calls.
  ONNXPROOF_TRY(options.tolerance.validate());
  ParityResult result;
  result.framework = reference.framework;
  PredictionMap predictions;
  const NoiseByOutput noise = pooled_relative_noise(reference);
  const detail::QuantizedOutputs grids = detail::quantized_outputs(model, reference, result);  // judged in steps
  for (const auto& [provider, advisory] : detail::providers_to_run(options.providers)) {
    const bool openvino = is_openvino_provider(provider);
    std::vector<Variant> variants = {{provider, GraphOptimization::all}};
    // ONNX Runtime's optimization levels: OpenVINO has none to turn off.
    if (options.compare_optimization_off && provider == options.providers.front() && !openvino) {
      variants.push_back({provider, GraphOptimization::disabled});
    }
    ProviderStatus status{provider, false, "", advisory, ""};
    for (const auto& variant : variants) {
      const auto cases = cases_to_run(reference, variant, result, !grids.grids.empty());
      if (cases.empty() && variant.level == GraphOptimization::disabled) continue;
      const SessionOptions session_options{.provider = provider,
                                           .optimization = variant.level,
                                           .intra_op_threads = options.intra_op_threads,
                                           .disabled_optimizers = options.disabled_optimizers,
                                           .tensorrt_cache = options.tensorrt_cache,
                                           .tensorrt_fp16 = options.precision == DType::float16};
      auto session = Session::open(model, lean_for_large_model(model, session_options));
      if (!session) {
        // Not the model's: a model path that is no file, the deployment's session-config refused.
        if (session.error().code() == ErrorCode::invalid_input) return std::unexpected(session.error());
        if (session.error().code() == ErrorCode::not_found || session.error().code() == ErrorCode::unsupported) {
          status.reason = session.error().describe();  // the provider, not the model
        } else if (advisory) {
          status.reason = session.error().describe();  // the float32 rows say what the model's is
        } else {
          result.findings.push_back(
              {FindingCode::run_failed, Severity::error, "parity", session.error().describe(), model.string(),
               openvino ? "OpenVINO cannot read or compile the model; run `onnxproof ops --target openvino` on it"
                        : "ONNX Runtime cannot load the model; run `onnxproof check` and `onnxproof ops` on it"});
          status.ran = true;
        }
        break;
      }
      // A GPU provider's nodes that ONNX Runtime hands back to its CPU provider; OpenVINO's CPU
      // plugin runs every node it compiled.
      if (provider != "cpu" && !openvino && variant.level == GraphOptimization::all) {
        detail::add_fallback_findings(model, reference, session_options, result);
      }
      if (variant.level == GraphOptimization::all) detail::audit_provider_rounding(provider, grids, result);
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
      status.precision = session->precision();
      ParityOptions judged = options;
      judged.precision = detail::judged_precision(*session, options.precision);
      run_variant(*session, variant, reference, cases, judged, noise, grids, result, predictions);
    }
    result.providers.push_back(status);
  }
  const auto requests = parity_analyzers::analyze_rows(reference, options.skipped_analyzers, result);
  parity_analyzers::locate_silent_failures(model, reference, options, requests, result);
  add_accuracy(reference, options, result, predictions);
  return result;
}

}  // namespace onnxproof
