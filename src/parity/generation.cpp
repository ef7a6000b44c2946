#include "onnxproof/parity/generation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "onnxproof/contract/generation.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/parity/compare.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {

namespace fs = std::filesystem;

static_assert(k_generation_schema == contract::k_generation_version,
              "generation.h names another version than schemas/ holds");

namespace {

// What the front end recorded for one run: its tensors.
struct RunReference {
  contract::GenerationRun run;
  Tensor prompt;                  // batch x prompt_length, int64
  std::vector<Tensor> empty_past;  // step 0's cache, in `past` order
  Tensor tokens;                  // steps x batch, int64
  Tensor logits;                  // steps x batch x vocabulary, float32
  std::optional<Tensor> exact;    // the same in float64
  std::vector<Tensor> encoder_inputs;        // in encoder.inputs order
  std::vector<Tensor> encoder_outputs;       // PyTorch's, in encoder.outputs order
  std::vector<Tensor> exact_encoder_outputs;  // float64, when exact
};

Expected<Tensor> read_tensor(const fs::path& path) {
  ONNXPROOF_TRY_ASSIGN(NamedTensor named, read_tensor_pb(path));
  return std::move(named.tensor);
}

Expected<std::vector<Tensor>> read_numbered(const fs::path& folder, std::string_view stem, std::size_t count) {
  std::vector<Tensor> tensors;
  for (std::size_t index = 0; index < count; ++index) {
    ONNXPROOF_TRY_ASSIGN(Tensor tensor, read_tensor(folder / fmt::format("{}_{}.pb", stem, index)));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

// A run's folder is run_N and an encoder a plain .onnx file name: nothing the document names may
// lead outside the run folder.
bool is_run_folder(const std::string& name) {
  return name.size() > 4 && name.starts_with("run_") &&
         std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_plain_onnx_name(const std::string& name) {
  return name.size() > 5 && name.ends_with(".onnx") && name.find_first_of("/\\") == std::string::npos &&
         name.front() != '.' && name.find('\0') == std::string::npos;
}

Expected<contract::GenerationDocument> read_generation_document(const fs::path& folder) {
  const fs::path path = folder / "generation.json";
  ONNXPROOF_TRY_ASSIGN(const nlohmann::json json, read_json_object(path, ErrorCode::invalid_input));
  ONNXPROOF_TRY_ASSIGN(contract::GenerationDocument document,
                       contract::read_generation(json, path, ErrorCode::invalid_input));
  if (document.past.size() != document.present.size()) {
    return fail(ErrorCode::invalid_input, path.string() + ": past and present name different numbers of tensors");
  }
  for (const auto& run : document.runs) {
    if (!is_run_folder(run.folder)) {
      return fail(ErrorCode::invalid_input, path.string() + ": a run's folder must be run_N, not '" + run.folder + "'");
    }
  }
  if (document.encoder && !is_plain_onnx_name(document.encoder->model)) {
    return fail(ErrorCode::invalid_input,
                path.string() + ": the encoder must be a .onnx file in the run folder, not '" + document.encoder->model + "'");
  }
  if (document.merged) {
    if (!document.encoder) {
      return fail(ErrorCode::invalid_input, path.string() + ": a merged decoder needs the encoder that feeds it");
    }
    if (!is_plain_onnx_name(document.merged->model)) {
      return fail(ErrorCode::invalid_input, path.string() + ": the merged decoder must be a .onnx file in the run "
                                                            "folder, not '" + document.merged->model + "'");
    }
    if (document.merged->past.size() != document.merged->present.size()) {
      return fail(ErrorCode::invalid_input,
                  path.string() + ": the merged decoder's past and present name different numbers of tensors");
    }
  }
  return document;
}

Expected<RunReference> read_run_reference(const fs::path& folder, const contract::GenerationDocument& document,
                                          const contract::GenerationRun& run) {
  RunReference reference{.run = run};
  ONNXPROOF_TRY_ASSIGN(reference.prompt, read_tensor(folder / "prompt.pb"));
  ONNXPROOF_TRY_ASSIGN(reference.tokens, read_tensor(folder / "tokens.pb"));
  ONNXPROOF_TRY_ASSIGN(reference.logits, read_tensor(folder / "logits.pb"));
  ONNXPROOF_TRY_ASSIGN(reference.empty_past, read_numbered(folder, "past", document.past.size()));
  if (run.exact) {
    ONNXPROOF_TRY_ASSIGN(Tensor exact, read_tensor(folder / "exact_logits.pb"));
    reference.exact = std::move(exact);
  }
  if (document.encoder) {
    ONNXPROOF_TRY_ASSIGN(reference.encoder_inputs, read_numbered(folder, "encoder_input", document.encoder->inputs.size()));
    ONNXPROOF_TRY_ASSIGN(reference.encoder_outputs,
                         read_numbered(folder, "encoder_output", document.encoder->outputs.size()));
    if (run.exact) {
      ONNXPROOF_TRY_ASSIGN(reference.exact_encoder_outputs,
                           read_numbered(folder, "exact_encoder_output", document.encoder->outputs.size()));
    }
  }
  const int64_t steps = document.steps;
  const int64_t batch = run.batch;
  const bool shapes_hold =
      reference.prompt.dtype() == DType::int64 && reference.prompt.shape() == std::vector<int64_t>{batch, run.prompt_length} &&
      reference.tokens.dtype() == DType::int64 && reference.tokens.shape() == std::vector<int64_t>{steps, batch} &&
      reference.logits.dtype() == DType::float32 && reference.logits.rank() == 3 && reference.logits.shape()[0] == steps &&
      reference.logits.shape()[1] == batch &&
      (!reference.exact || (reference.exact->dtype() == DType::float64 && reference.exact->shape() == reference.logits.shape()));
  // Token ids index the logits: each must lie in [0, vocabulary).
  bool tokens_hold = shapes_hold && reference.logits.shape()[2] >= 1;
  if (tokens_hold) {
    const int64_t vocabulary = reference.logits.shape()[2];
    for (const int64_t token : reference.tokens.values<int64_t>()) tokens_hold = tokens_hold && token >= 0 && token < vocabulary;
  }
  bool encoder_holds = true;
  for (std::size_t index = 0; index < reference.exact_encoder_outputs.size(); ++index) {
    encoder_holds = encoder_holds && reference.exact_encoder_outputs[index].shape() == reference.encoder_outputs[index].shape();
  }
  if (!shapes_hold || !tokens_hold || !encoder_holds) {
    return fail(ErrorCode::invalid_input, folder.string() + ": the generation tensors do not have the shapes and "
                                                            "types generation.json describes");
  }
  return reference;
}

// Rows [first, first + count) of dimension 0, as a tensor of their own (one step of steps x ...).
Expected<Tensor> rows_of(const Tensor& tensor, int64_t first, std::vector<int64_t> shape) {
  int64_t elements = 1;
  for (const int64_t dim : shape) elements *= dim;
  const std::size_t width = dtype_size(tensor.dtype());
  const auto bytes = tensor.bytes().subspan(static_cast<std::size_t>(first * elements) * width,
                                            static_cast<std::size_t>(elements) * width);
  return Tensor::from_bytes(tensor.dtype(), std::move(shape), std::vector<std::byte>(bytes.begin(), bytes.end()));
}

// ONNX Runtime's logits (batch x sequence x vocabulary) at the last position: batch x vocabulary.
Expected<Tensor> last_position(const Tensor& logits) {
  if (logits.dtype() != DType::float32 || logits.rank() != 3) {
    return fail(ErrorCode::invalid_input, "the logits output is " + format_shape(logits.shape()) +
                                              ", not float32 batch x sequence x vocabulary");
  }
  const int64_t batch = logits.shape()[0], length = logits.shape()[1], vocabulary = logits.shape()[2];
  if (length < 1 || vocabulary < 1) {
    return fail(ErrorCode::invalid_input, "the logits output is " + format_shape(logits.shape()) +
                                              ": no position or no vocabulary to pick a token from");
  }
  std::vector<float> values(static_cast<std::size_t>(batch * vocabulary));
  const auto all = logits.values<float>();
  for (int64_t row = 0; row < batch; ++row) {
    std::copy_n(all.begin() + (row * length + length - 1) * vocabulary, vocabulary, values.begin() + row * vocabulary);
  }
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return Tensor::from_bytes(DType::float32, {batch, vocabulary}, std::move(bytes));
}

// The index of the largest value of each row of a batch x vocabulary tensor.
std::vector<int64_t> argmax_rows(const Tensor& logits) {
  const int64_t batch = logits.shape()[0], vocabulary = logits.shape()[1];
  std::vector<int64_t> tokens;
  for (int64_t row = 0; row < batch; ++row) {
    int64_t best = 0;
    for (int64_t column = 1; column < vocabulary; ++column) {
      if (logits.value_as_double(row * vocabulary + column) > logits.value_as_double(row * vocabulary + best)) best = column;
    }
    tokens.push_back(best);
  }
  return tokens;
}

Tensor filled_int64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor tensor = *Tensor::zeros(DType::int64, std::move(shape));
  auto out = tensor.mutable_values<int64_t>();
  for (std::size_t index = 0; index < out.size(); ++index) out[index] = values.empty() ? 1 : values[index];
  return tensor;
}

}  // namespace

int GenerationResult::identical_steps() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const auto& step) { return step.tokens_equal(); }));
}

namespace {

// A tensor against the reference: the calibrated rule (`calibrated`: float64 values recorded and
// no user tolerance for `name`), else the fixed rule relative to the tensor's scale (the user's
// figures element by element; the budget reported is the largest any element gets).
struct Judgment {
  double max_abs = 0.0, error = 0.0, budget = 0.0;
  double noise = 0.0;  // PyTorch float32's own distance from float64 (the fixed rule: the budget)
  int64_t mismatches = 0;
  std::string shape_problem;  // ONNX Runtime's tensor has another shape or type: nothing compared
};

Judgment judge_tensor(const std::string& name, const Tensor& pytorch, const Tensor* exact, const Tensor& onnx,
                      const ToleranceOptions& tolerance, bool calibrated) {
  Judgment judgment;
  if (onnx.shape() != pytorch.shape() || onnx.dtype() != pytorch.dtype()) {
    judgment.shape_problem = fmt::format("ONNX Runtime's is {} {}, the reference's {} {}", dtype_name(onnx.dtype()),
                                         format_shape(onnx.shape()), dtype_name(pytorch.dtype()),
                                         format_shape(pytorch.shape()));
    judgment.max_abs = judgment.error = std::numeric_limits<double>::infinity();
    judgment.mismatches = std::max<int64_t>(1, pytorch.size());
    return judgment;
  }
  if (calibrated && exact) {
    ExactDeviation deviation;
    const Comparison comparison = compare_calibrated(pytorch, *exact, onnx, 0.0, deviation);
    judgment = {.max_abs = comparison.max_abs, .error = deviation.onnx, .budget = deviation.budget,
                .noise = deviation.pytorch, .mismatches = comparison.mismatches};
  } else {
    const Comparison comparison = tolerance.compare(name, pytorch, onnx, pytorch.dtype());
    const Tolerance fixed = tolerance.resolve(name, pytorch.dtype());
    const double budget = tolerance.overridden(name) ? fixed.atol + fixed.rtol * finite_scale(pytorch)
                                                     : fixed.rtol * finite_scale(pytorch);
    judgment = {.max_abs = comparison.max_abs, .error = comparison.max_abs, .budget = budget, .noise = budget,
                .mismatches = comparison.mismatches};
  }
  return judgment;
}

// One step's logits against the reference, and the near-tie decision for differing tokens.
void judge_step(GenerationStep& step, const Tensor& pytorch, const std::optional<Tensor>& exact, const Tensor& onnx,
                const ToleranceOptions& tolerance, const std::string& logits, bool calibrated) {
  const Tensor& truth = exact ? *exact : pytorch;
  const Judgment judgment = judge_tensor(logits, pytorch, exact ? &*exact : nullptr, onnx, tolerance, calibrated);
  step.max_abs = judgment.max_abs;
  step.error = judgment.error;
  step.budget = judgment.budget;
  step.mismatches = judgment.mismatches;
  step.shape_problem = judgment.shape_problem;
  if (!step.shape_problem.empty()) return;  // no token of another shape is a near tie
  const double noise = judgment.noise;
  const int64_t vocabulary = pytorch.shape()[1];
  for (std::size_t row = 0; row < step.pytorch_tokens.size(); ++row) {
    if (step.pytorch_tokens[row] == step.onnx_tokens[row]) continue;
    const auto at = [&](int64_t token) { return truth.value_as_double(static_cast<int64_t>(row) * vocabulary + token); };
    const double margin = at(step.pytorch_tokens[row]) - at(step.onnx_tokens[row]);
    if (!step.tie_margin) step.tie_margin = margin;
    step.near_tie = step.mismatches == 0 && margin <= step.budget + noise;
    if (!step.near_tie) return;
  }
}

// What one greedy loop feeds a decoder file: the token ids, the inputs fed the same tensor at every
// step (the encoder's outputs, the source mask), the inputs carried from one step's outputs to the
// next (the caches) with their step-0 values, and a merged decoder's branch input.
struct LoopFeeds {
  std::string mask;                        // the decoder-only mask over past and new tokens ("" none)
  std::map<std::string, Tensor> fixed;
  std::vector<std::string> carried_in;     // past, in the order of carried_out
  std::vector<std::string> carried_out;    // present
  std::vector<Tensor> initial;             // step 0's carried inputs
  std::string branch;                      // use_cache_branch: false at step 0, true after ("" none)
};

// The session's inputs must all be fed, and the outputs the loop reads must exist: checked up front.
Expected<void> check_names(const Session& session, const contract::GenerationDocument& document,
                           const std::vector<std::string>& fed, const std::vector<std::string>& read,
                           const std::string& file) {
  for (const auto& value : session.inputs()) {
    if (std::find(fed.begin(), fed.end(), value.name) == fed.end()) {
      return fail(ErrorCode::invalid_input, file + " takes input '" + value.name +
                                                "', which the generation loop does not feed (it feeds ids, the mask, "
                                                "the caches and the encoder's outputs)");
    }
  }
  std::vector<std::string> outputs{document.logits};
  outputs.insert(outputs.end(), read.begin(), read.end());
  for (const auto& name : outputs) {
    const auto& values = session.outputs();
    if (std::none_of(values.begin(), values.end(), [&](const auto& value) { return value.name == name; })) {
      return fail(ErrorCode::invalid_input, file + " has no output '" + name + "' for the generation loop");
    }
  }
  return {};
}

// Every input a loop over `document`'s decoder (or its merged decoder) feeds, by name.
std::vector<std::string> fed_names(const contract::GenerationDocument& document, bool merged) {
  std::vector<std::string> names{document.input_ids};
  if (!document.attention_mask.empty()) names.push_back(document.attention_mask);
  names.insert(names.end(), document.past.begin(), document.past.end());
  const auto add_keys = [&](const std::map<std::string, std::string>& feeds) {
    for (const auto& [name, source] : feeds) names.push_back(name);
  };
  if (merged) {
    add_keys(document.merged->feeds);
    names.insert(names.end(), document.merged->past.begin(), document.merged->past.end());
    names.push_back(document.merged->use_cache_branch);
  } else if (document.encoder) {
    add_keys(document.encoder->feeds);
  }
  return names;
}

std::size_t output_index(const Session& session, const std::string& name) {
  const auto& values = session.outputs();
  return static_cast<std::size_t>(
      std::find_if(values.begin(), values.end(), [&](const auto& value) { return value.name == name; }) - values.begin());
}

std::string run_context(const GenerationResult& result) {
  return result.run.empty() ? "" : fmt::format(" ({})", result.run);
}

// The findings of a finished loop: the encoder's outputs outside the rule, the first failing
// step, and the near ties; `source` is what the reference's framework is called ("PyTorch").
void add_generation_findings(GenerationResult& result, const std::string& source) {
  for (const auto& output : result.encoder) {
    if (output.passed()) continue;
    result.findings.push_back(Finding{
        .code = FindingCode::encoder_mismatch, .severity = Severity::error, .step = "generate",
        .message = output.shape_problem.empty()
                       ? fmt::format("on {} the encoder's output '{}'{} is {:.3g} from the reference, over the budget "
                                     "{:.3g} ({} values outside): every step decodes from it",
                                     result.provider, output.name, run_context(result), output.error, output.budget,
                                     output.mismatches)
                       : fmt::format("on {} the encoder's output '{}'{} has another shape: {}; every step decodes "
                                     "from it",
                                     result.provider, output.name, run_context(result), output.shape_problem),
        .where = "encoder output " + output.name,
        .hint = "the encoder's graph (encoder.onnx) departs from " + source + " before any token: check its attention "
                "mask and the cross-attention keys and values it computes"});
    break;
  }
  std::vector<int> ties;
  for (const auto& step : result.steps) {
    if (step.near_tie) ties.push_back(step.step);
    if (!step.passed() && !result.first_failure) result.first_failure = step.step;
    if (!step.tokens_equal() && !result.first_token_difference) result.first_token_difference = step.step;
  }
  if (result.first_failure) {
    const GenerationStep& step = result.steps[static_cast<std::size_t>(*result.first_failure)];
    std::string what;
    if (!step.shape_problem.empty()) {
      what = "its last-position logits have another shape: " + step.shape_problem;
    } else if (!step.tokens_equal()) {
      what = fmt::format("ONNX Runtime picks token {} where {} picks {} (exact margin {:.3g}, budget {:.3g})",
                         fmt::join(step.onnx_tokens, ","), source, fmt::join(step.pytorch_tokens, ","),
                         step.tie_margin.value_or(0.0), step.budget);
    } else if (result.rule == "user") {  // element by element: no one budget to quote
      what = fmt::format("its logits are up to {:.3g} from {}'s, {} values outside the --rtol/--atol given",
                         step.error, source, step.mismatches);
    } else {
      what = fmt::format("its logits are {:.3g} from the reference, over the budget {:.3g} ({} values outside)",
                         step.error, step.budget, step.mismatches);
    }
    const FindingCode code =
        step.tokens_equal() ? FindingCode::generation_logits_outside : FindingCode::generation_diverged;
    result.findings.push_back(Finding{
        .code = code, .severity = Severity::error, .step = "generate",
        .message = fmt::format("greedy generation on {}{} first goes wrong at step {} (past length {}): {}",
                               result.provider, run_context(result), step.step, step.past_length, what),
        .where = fmt::format("generation step {}", step.step),
        .hint = step.step == 0 && !result.encoder.empty()
                    ? "step 0 decodes from the encoder's cross-attention cache and an empty self-attention cache: "
                      "check the encoder's mask and which layer's keys and values feed each decoder layer"
                    : "the step and past length named are where the cache path first departs from " + source +
                          ": check how the past length, position ids and attention mask are computed from the cache"});
  }
  if (!ties.empty()) {
    // Warning: the generated tokens are not identical, which the user must hear even though
    // neither runtime is wrong.
    result.findings.push_back(Finding{
        .code = FindingCode::generation_near_tie, .severity = Severity::warning, .step = "generate",
        .message = fmt::format("on {}{} the top two tokens were within the budget of each other at step(s) {}: ONNX "
                               "Runtime picked the other one; the steps after were fed {}'s token",
                               result.provider, run_context(result), fmt::join(ties, ", "), source),
        .where = fmt::format("generation step {}", ties.front()),
        .hint = "no defect of the export; another prompt proves more, and sampling settings decide such ties in "
                "production"});
  }
}

// An encoder's output against PyTorch's: the calibrated rule with a float64 run, else the fixed one.
EncoderOutputCheck judge_encoder_output(const std::string& name, const Tensor& pytorch, const Tensor* exact,
                                        const Tensor& onnx, const ToleranceOptions& tolerance) {
  const Judgment judgment = judge_tensor(name, pytorch, exact, onnx, tolerance, !tolerance.overridden(name));
  return {.name = name, .max_abs = judgment.max_abs, .error = judgment.error, .budget = judgment.budget,
          .mismatches = judgment.mismatches, .shape_problem = judgment.shape_problem};
}

// The encoder run once on a run's inputs: every input and ONNX Runtime output by name, its outputs
// judged against PyTorch's into `result` when `judge`.
Expected<std::map<std::string, Tensor>> run_encoder(Session& encoder, const contract::GenerationEncoder& document,
                                                    const RunReference& reference, const ToleranceOptions& tolerance,
                                                    bool judge, GenerationResult& result) {
  std::vector<Feed> feeds;
  for (std::size_t index = 0; index < document.inputs.size(); ++index) {
    feeds.push_back({document.inputs[index], &reference.encoder_inputs[index]});
  }
  auto outputs = encoder.run(feeds);
  if (!outputs) {
    Error error = outputs.error();
    error.add_context("the encoder (" + reference.run.label + ")");
    return std::unexpected(std::move(error));
  }
  std::map<std::string, Tensor> by_name;
  for (std::size_t index = 0; index < document.outputs.size(); ++index) {
    const std::size_t at = output_index(encoder, document.outputs[index]);
    if (at >= outputs->size()) {
      return fail(ErrorCode::invalid_input, "the encoder has no output '" + document.outputs[index] + "'");
    }
    const Tensor* exact = reference.exact_encoder_outputs.empty() ? nullptr : &reference.exact_encoder_outputs[index];
    if (judge) {
      result.encoder.push_back(judge_encoder_output(document.outputs[index], reference.encoder_outputs[index], exact,
                                                    (*outputs)[at], tolerance));
    }
    by_name.emplace(document.outputs[index], std::move((*outputs)[at]));
  }
  for (std::size_t index = 0; index < document.inputs.size(); ++index) {
    by_name.emplace(document.inputs[index], reference.encoder_inputs[index]);
  }
  return by_name;
}

// The tensors `feeds` (decoder input -> encoder input or output) names, from the encoder's run.
Expected<std::map<std::string, Tensor>> selected(const std::map<std::string, Tensor>& by_name,
                                                 const std::map<std::string, std::string>& feeds) {
  std::map<std::string, Tensor> fed;
  for (const auto& [input, source] : feeds) {
    const auto found = by_name.find(source);
    if (found == by_name.end()) {
      return fail(ErrorCode::invalid_input, "generation.json feeds '" + input + "' from '" + source +
                                                "', which is neither an input nor an output of the encoder");
    }
    fed.emplace(input, found->second);
  }
  return fed;
}

// A cross-attention cache from another request: the real one negated (float32 caches, the ones
// the exporters write; another dtype is fed as it is). A merged decoder's first step must compute
// its own and ignore what it is fed.
Tensor stale(const Tensor& cache) {
  Tensor copy = cache;
  if (copy.dtype() == DType::float32) {
    for (float& value : copy.mutable_values<float>()) value = -value;
  }
  return copy;
}

// What a run's loop feeds: the decoder's caches from empty, the encoder's outputs fixed; for the
// merged decoder also the cross-attention cache, stale at step 0 and carried after it.
Expected<LoopFeeds> loop_feeds(const contract::GenerationDocument& document, const RunReference& reference,
                               const std::map<std::string, Tensor>& encoded, bool merged) {
  LoopFeeds loop{.mask = document.attention_mask, .carried_in = document.past, .carried_out = document.present,
                 .initial = reference.empty_past};
  if (merged) {
    ONNXPROOF_TRY_ASSIGN(loop.fixed, selected(encoded, document.merged->feeds));
    ONNXPROOF_TRY_ASSIGN(const auto real, selected(encoded, document.encoder->feeds));
    for (std::size_t index = 0; index < document.merged->past.size(); ++index) {
      const auto found = real.find(document.merged->past[index]);
      if (found == real.end()) {
        return fail(ErrorCode::invalid_input, "generation.json: the merged decoder's '" + document.merged->past[index] +
                                                  "' is no decoder input the encoder feeds");
      }
      loop.carried_in.push_back(document.merged->past[index]);
      loop.carried_out.push_back(document.merged->present[index]);
      loop.initial.push_back(stale(found->second));
    }
    loop.branch = document.merged->use_cache_branch;
  } else if (document.encoder) {
    ONNXPROOF_TRY_ASSIGN(loop.fixed, selected(encoded, document.encoder->feeds));
  }
  return loop;
}

// One run's greedy loop through a decoder file.
Expected<void> run_loop(Session& session, const contract::GenerationDocument& document, const RunReference& reference,
                        LoopFeeds loop, const ToleranceOptions& tolerance, GenerationResult& result) {
  const bool calibrated = reference.exact && !tolerance.overridden(document.logits);
  const int64_t batch = reference.run.batch, vocabulary = reference.logits.shape()[2];
  Tensor ids = reference.prompt;
  std::vector<Tensor> carried = std::move(loop.initial);
  const std::size_t logits_index = output_index(session, document.logits);
  int64_t past_length = 0;
  for (int64_t index = 0; index < document.steps; ++index) {
    const Tensor mask = filled_int64({batch, past_length + ids.shape()[1]}, {});
    Tensor branch = *Tensor::zeros(DType::boolean, {1});
    branch.mutable_values<uint8_t>()[0] = index > 0 ? 1 : 0;
    std::vector<Feed> feeds{{document.input_ids, &ids}};
    if (!loop.mask.empty()) feeds.push_back({loop.mask, &mask});
    if (!loop.branch.empty()) feeds.push_back({loop.branch, &branch});
    for (std::size_t at = 0; at < carried.size(); ++at) feeds.push_back({loop.carried_in[at], &carried[at]});
    for (const auto& [name, tensor] : loop.fixed) feeds.push_back({name, &tensor});
    auto outputs = session.run(feeds);
    if (!outputs) {
      Error error = outputs.error();
      error.add_context(fmt::format("generation step {} (past length {}){}", index, past_length, run_context(result)));
      return std::unexpected(std::move(error));
    }
    ONNXPROOF_TRY_ASSIGN(const Tensor onnx, last_position((*outputs)[logits_index]));
    ONNXPROOF_TRY_ASSIGN(const Tensor pytorch, rows_of(reference.logits, index, {batch, vocabulary}));
    std::optional<Tensor> exact;
    if (reference.exact) {
      ONNXPROOF_TRY_ASSIGN(exact, rows_of(*reference.exact, index, {batch, vocabulary}));
    }
    const auto token_values = reference.tokens.values<int64_t>().subspan(static_cast<std::size_t>(index * batch),
                                                                         static_cast<std::size_t>(batch));
    GenerationStep step;
    step.step = static_cast<int>(index);
    step.past_length = past_length;
    step.pytorch_tokens.assign(token_values.begin(), token_values.end());
    step.onnx_tokens = argmax_rows(onnx);
    judge_step(step, pytorch, exact, onnx, tolerance, document.logits, calibrated);
    result.steps.push_back(std::move(step));
    for (std::size_t at = 0; at < carried.size(); ++at) {
      carried[at] = std::move((*outputs)[output_index(session, loop.carried_out[at])]);
    }
    past_length += ids.shape()[1];
    ids = filled_int64({batch, 1}, result.steps.back().pytorch_tokens);  // the reference's token: teacher forcing
  }
  return {};
}

GenerationResult result_for(const contract::GenerationDocument& document, const RunReference& reference,
                            const SessionOptions& options, const ToleranceOptions& tolerance, const std::string& decoder) {
  GenerationResult result;
  result.provider = options.provider;
  result.optimization = std::string(optimization_name(options.optimization));
  result.run = reference.run.label + (decoder.empty() ? "" : ", " + decoder);
  result.padded = reference.run.padded;
  result.batch = static_cast<int>(reference.run.batch);
  result.prompt_length = reference.run.prompt_length;
  result.exact_missing_reason = reference.run.exact_missing_reason;
  const bool calibrated = reference.exact && !tolerance.overridden(document.logits);
  result.rule = calibrated ? "calibrated" : (tolerance.overridden(document.logits) ? "user" : "fixed");
  return result;
}

// A decoder file with the sha256 the reference names (unless `digest` says to ignore it), opened.
Expected<Session> open_recorded(const fs::path& path, const std::string& sha256, const SessionOptions& options,
                                EncoderDigest digest, const std::string& what) {
  ONNXPROOF_TRY_ASSIGN(const std::string actual, sha256_file(path));
  if (digest == EncoderDigest::check && actual != sha256) {
    return fail(ErrorCode::invalid_input, path.string() + " changed since it was exported (sha256 " + actual +
                                              ", generation.json says " + sha256 + "): its reference outputs belong to "
                                              "another " + what);
  }
  auto opened = Session::open(path, options);
  if (!opened) {
    Error error = opened.error();
    error.add_context("the " + what + " " + path.filename().string());
    return std::unexpected(std::move(error));
  }
  return std::move(*opened);
}

}  // namespace

Expected<void> check_generation_reference(const fs::path& reference_folder) {
  ONNXPROOF_TRY(read_generation_document(reference_folder));
  return {};
}

Expected<std::vector<GenerationResult>> prove_generation(const fs::path& model, const fs::path& run_folder,
                                                         const fs::path& reference_folder, const SessionOptions& options,
                                                         const ToleranceOptions& tolerance, const std::string& framework,
                                                         EncoderDigest digest) {
  ONNXPROOF_TRY_ASSIGN(const contract::GenerationDocument document, read_generation_document(reference_folder));
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open(model, options));
  std::vector<std::string> read = document.present;
  ONNXPROOF_TRY(check_names(session, document, fed_names(document, false), read, "the model"));
  std::optional<Session> encoder, merged;
  if (document.encoder) {
    ONNXPROOF_TRY_ASSIGN(encoder, open_recorded(run_folder / document.encoder->model, document.encoder->sha256,
                                                options, digest, "encoder"));
  }
  if (document.merged) {
    ONNXPROOF_TRY_ASSIGN(merged, open_recorded(run_folder / document.merged->model, document.merged->sha256, options,
                                               digest, "merged decoder"));
    read.insert(read.end(), document.merged->present.begin(), document.merged->present.end());
    ONNXPROOF_TRY(check_names(*merged, document, fed_names(document, true), read, document.merged->model));
  }
  const std::string source = source_title(framework);
  std::vector<GenerationResult> results;
  for (const auto& run : document.runs) {
    ONNXPROOF_TRY_ASSIGN(const RunReference reference, read_run_reference(reference_folder / run.folder, document, run));
    for (Session* decoder : {&session, merged ? &*merged : nullptr}) {
      if (!decoder) continue;
      const bool is_merged = decoder != &session;
      GenerationResult result =
          result_for(document, reference, options, tolerance, is_merged ? document.merged->model : "");
      std::map<std::string, Tensor> encoded;
      if (encoder) {  // the encoder's outputs are judged once per run, with the decoder's own loop
        ONNXPROOF_TRY_ASSIGN(encoded, run_encoder(*encoder, *document.encoder, reference, tolerance, !is_merged, result));
      }
      ONNXPROOF_TRY_ASSIGN(LoopFeeds loop, loop_feeds(document, reference, encoded, is_merged));
      ONNXPROOF_TRY(run_loop(*decoder, document, reference, std::move(loop), tolerance, result));
      add_generation_findings(result, source);
      results.push_back(std::move(result));
    }
  }
  return results;
}

}  // namespace onnxproof
