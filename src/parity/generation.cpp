#include "onnxproof/parity/generation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "generation_findings.h"
#include "generation_reference.h"
#include "generation_tensors.h"
#include "onnxproof/contract/generation.h"
#include "onnxproof/core/json_file.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/parity/calibrated.h"
#include "onnxproof/parity/compare.h"

namespace onnxproof {

namespace fs = std::filesystem;

static_assert(k_generation_schema == contract::k_generation_version,
              "generation.h names another version than schemas/ holds");

using detail::add_generation_findings;
using detail::argmax_rows;
using detail::filled_int64;
using detail::last_position;
using detail::positions_from;
using detail::read_generation_document;
using detail::read_run_reference;
using detail::rows_of;
using detail::run_context;
using detail::RunReference;

int GenerationResult::identical_steps() const {
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [](const auto& step) { return step.tokens_equal(); }));
}

namespace {

// A tensor against the reference: the calibrated rule (`calibrated`: float64 values recorded and
// no user tolerance for `name`), else the fixed rule relative to the tensor's scale (the user's
// figures element by element; the budget reported is the largest any element gets).
struct Judgment {
  double max_abs = 0.0, error = 0.0, budget = 0.0;
  double noise = 0.0;  // PyTorch float32's own distance from float64 (the fixed rule: the budget)
  int64_t mismatches = 0;
  std::string shape_problem{};  // ONNX Runtime's tensor has another shape or type: nothing compared
};

Judgment judge_tensor(const std::string& name, const Tensor& pytorch, const Tensor* exact, const Tensor& onnx,
                      const ToleranceOptions& tolerance, bool calibrated) {
  Judgment judgment;
  if (onnx.shape() != pytorch.shape() || onnx.dtype() != pytorch.dtype()) {
    judgment.shape_problem =
        fmt::format("ONNX Runtime's is {} {}, the reference's {} {}", dtype_name(onnx.dtype()),
                    format_shape(onnx.shape()), dtype_name(pytorch.dtype()), format_shape(pytorch.shape()));
    judgment.max_abs = judgment.error = std::numeric_limits<double>::infinity();
    judgment.mismatches = std::max<int64_t>(1, pytorch.size());
    return judgment;
  }
  if (calibrated && exact) {
    ExactDeviation deviation;
    const Comparison comparison = compare_calibrated(pytorch, *exact, onnx, 0.0, deviation);
    judgment = {.max_abs = comparison.max_abs,
                .error = deviation.onnx,
                .budget = deviation.budget,
                .noise = deviation.pytorch,
                .mismatches = comparison.mismatches};
  } else {
    const Comparison comparison = tolerance.compare(name, pytorch, onnx, pytorch.dtype());
    const Tolerance fixed = tolerance.resolve(name, pytorch.dtype());
    const double budget = tolerance.overridden(name) ? fixed.atol + fixed.rtol * finite_scale(pytorch)
                                                     : fixed.rtol * finite_scale(pytorch);
    judgment = {.max_abs = comparison.max_abs,
                .error = comparison.max_abs,
                .budget = budget,
                .noise = budget,
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
    const auto at = [&](int64_t token) {
      return truth.value_as_double(static_cast<int64_t>(row) * vocabulary + token);
    };
    const double margin = at(step.pytorch_tokens[row]) - at(step.onnx_tokens[row]);
    if (!step.tie_margin) step.tie_margin = margin;
    // A tie within the noise either way. A recorded token that scores far below ONNX Runtime's
    // pick in the reference's own logits is no tie: the reference contradicts itself (a tampered
    // or corrupted tokens.pb), and the step fails.
    step.near_tie = step.mismatches == 0 && std::abs(margin) <= step.budget + noise;
    if (!step.near_tie) return;
  }
}

// What one greedy loop feeds a decoder file: the token ids, the inputs fed the same tensor at every
// step (the encoder's outputs, the source mask), the inputs carried from one step's outputs to the
// next (the caches) with their step-0 values, and a merged decoder's branch input.
struct LoopFeeds {
  std::string mask;       // the decoder-only mask over past and new tokens ("" none)
  std::string positions;  // each new token's position ("" none)
  std::map<std::string, Tensor> fixed{};
  std::vector<std::string> carried_in;   // past, in the order of carried_out
  std::vector<std::string> carried_out;  // present ("" an input that keeps its value)
  std::vector<Tensor> initial;           // step 0's carried inputs
  std::string branch{};                  // use_cache_branch: false at step 0, true after ("" none)
  Session* first = nullptr;              // step 0's own file (document.first), which hands off the caches
  std::map<std::string, Tensor> first_fixed{};
};

// The session's inputs must all be fed, and the outputs the loop reads must exist: checked up front.
Expected<void> check_names(const Session& session, const std::string& logits, const std::vector<std::string>& fed,
                           const std::vector<std::string>& read, const std::string& file) {
  for (const auto& value : session.inputs()) {
    if (std::find(fed.begin(), fed.end(), value.name) == fed.end()) {
      return fail(ErrorCode::invalid_input, file + " takes input '" + value.name +
                                                "', which the generation loop does not feed (it feeds ids, the mask, "
                                                "the caches and the encoder's outputs)");
    }
  }
  std::vector<std::string> outputs{logits};
  outputs.insert(outputs.end(), read.begin(), read.end());
  for (const auto& name : outputs) {
    if (name.empty()) continue;  // a past that keeps its value
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
  if (!document.position_ids.value_or("").empty()) names.push_back(*document.position_ids);
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

// Every input the first-step file takes from the loop.
std::vector<std::string> first_fed_names(const contract::GenerationFirstStep& first) {
  std::vector<std::string> names{first.input_ids};
  for (const auto* name : {&first.attention_mask, &first.position_ids}) {
    if (!name->empty()) names.push_back(*name);
  }
  for (const auto& [name, source] : first.feeds) names.push_back(name);
  return names;
}

std::size_t output_index(const Session& session, const std::string& name) {
  const auto& values = session.outputs();
  return static_cast<std::size_t>(
      std::find_if(values.begin(), values.end(), [&](const auto& value) { return value.name == name; }) -
      values.begin());
}

// An encoder's output against PyTorch's: the calibrated rule with a float64 run, else the fixed one.
EncoderOutputCheck judge_encoder_output(const std::string& name, const Tensor& pytorch, const Tensor* exact,
                                        const Tensor& onnx, const ToleranceOptions& tolerance) {
  const Judgment judgment = judge_tensor(name, pytorch, exact, onnx, tolerance, !tolerance.overridden(name));
  return {.name = name,
          .max_abs = judgment.max_abs,
          .error = judgment.error,
          .budget = judgment.budget,
          .mismatches = judgment.mismatches,
          .shape_problem = judgment.shape_problem};
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

// A request's encoder inputs and the source framework's encoder outputs, by name: what decoder
// files exported without their encoder (transformers' seq2seq prefill and decode) are fed.
std::map<std::string, Tensor> recorded_encoding(const contract::GenerationEncoder& document,
                                                const RunReference& reference) {
  std::map<std::string, Tensor> by_name;
  for (std::size_t index = 0; index < document.outputs.size(); ++index)
    by_name.emplace(document.outputs[index], reference.encoder_outputs[index]);
  for (std::size_t index = 0; index < document.inputs.size(); ++index)
    by_name.emplace(document.inputs[index], reference.encoder_inputs[index]);
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
  LoopFeeds loop{.mask = document.attention_mask,
                 .positions = document.position_ids.value_or(""),
                 .carried_in = document.past,
                 .carried_out = document.present,
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
  if (!merged && document.first) {
    ONNXPROOF_TRY_ASSIGN(loop.first_fixed, selected(encoded, document.first->feeds));
  }
  return loop;
}

// One step's feeds and outputs under the names of the file that runs it: step 0 through the
// first-step file where there is one (no cache, its own encoder feeds), else the decoder file.
struct StepFile {
  Session* session;
  const std::string *ids, *mask, *positions, *logits;
  const std::map<std::string, Tensor>* fixed;
};

StepFile step_file(Session& session, const contract::GenerationDocument& document, const LoopFeeds& loop,
                   bool first_step) {
  if (first_step && loop.first) {
    const auto& first = *document.first;
    return {loop.first, &first.input_ids, &first.attention_mask, &first.position_ids, &first.logits, &loop.first_fixed};
  }
  return {&session, &document.input_ids, &loop.mask, &loop.positions, &document.logits, &loop.fixed};
}

// One run's greedy loop through a decoder file.
Expected<void> run_loop(Session& session, const contract::GenerationDocument& document, const RunReference& reference,
                        LoopFeeds loop, const ToleranceOptions& tolerance, GenerationResult& result) {
  const bool calibrated = reference.exact && !tolerance.overridden(document.logits);
  const int64_t batch = reference.run.batch, vocabulary = reference.logits.shape()[2];
  Tensor ids = reference.prompt;
  std::vector<Tensor> carried = std::move(loop.initial);
  int64_t past_length = 0;
  for (int64_t index = 0; index < document.steps; ++index) {
    const bool handing_off = index == 0 && loop.first;
    const StepFile file = step_file(session, document, loop, index == 0);
    const Tensor mask = filled_int64({batch, past_length + ids.shape()[1]}, {});
    const Tensor positions = positions_from(batch, past_length, ids.shape()[1]);
    Tensor branch = *Tensor::zeros(DType::boolean, {1});
    branch.mutable_values<uint8_t>()[0] = index > 0 ? 1 : 0;
    std::vector<Feed> feeds{{*file.ids, &ids}};
    if (!file.mask->empty()) feeds.push_back({*file.mask, &mask});
    if (!file.positions->empty()) feeds.push_back({*file.positions, &positions});
    if (!handing_off) {
      if (!loop.branch.empty()) feeds.push_back({loop.branch, &branch});
      for (std::size_t at = 0; at < carried.size(); ++at) feeds.push_back({loop.carried_in[at], &carried[at]});
    }
    for (const auto& [name, tensor] : *file.fixed) feeds.push_back({name, &tensor});
    auto outputs = file.session->run(feeds);
    if (!outputs) {  // a file that refuses what the loop feeds it (its own outputs, after step 0) fails the proof
      Error error(ErrorCode::runtime, outputs.error().describe());
      error.add_context(fmt::format("generation step {} (past length {}){}", index, past_length, run_context(result)));
      return std::unexpected(std::move(error));
    }
    ONNXPROOF_TRY_ASSIGN(const Tensor onnx, last_position((*outputs)[output_index(*file.session, *file.logits)]));
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
    if (handing_off) carried.resize(document.first->handoff.size());
    for (std::size_t at = 0; at < carried.size(); ++at) {
      const std::string& out = handing_off ? document.first->handoff[at] : loop.carried_out[at];
      if (!out.empty()) carried[at] = std::move((*outputs)[output_index(*file.session, out)]);
    }
    past_length += ids.shape()[1];
    ids = filled_int64({batch, 1}, result.steps.back().pytorch_tokens);  // the reference's token: teacher forcing
  }
  return {};
}

GenerationResult result_for(const contract::GenerationDocument& document, const RunReference& reference,
                            const SessionOptions& options, const ToleranceOptions& tolerance,
                            const std::string& decoder) {
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
                                              ", generation.json says " + sha256 +
                                              "): its reference outputs belong to "
                                              "another " +
                                              what);
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
                                                         const fs::path& reference_folder,
                                                         const SessionOptions& options,
                                                         const ToleranceOptions& tolerance,
                                                         const std::string& framework, EncoderDigest digest) {
  ONNXPROOF_TRY_ASSIGN(const contract::GenerationDocument document, read_generation_document(reference_folder));
  ONNXPROOF_TRY_ASSIGN(Session session, Session::open(model, options));
  std::vector<std::string> read = document.present;
  ONNXPROOF_TRY(check_names(session, document.logits, fed_names(document, false), read, "the model"));
  std::optional<Session> encoder, merged, first;
  if (document.encoder && !document.encoder->model.empty()) {  // no file: PyTorch's encoder outputs are fed
    ONNXPROOF_TRY_ASSIGN(encoder, open_recorded(run_folder / document.encoder->model, document.encoder->sha256, options,
                                                digest, "encoder"));
  }
  if (document.merged) {
    ONNXPROOF_TRY_ASSIGN(merged, open_recorded(run_folder / document.merged->model, document.merged->sha256, options,
                                               digest, "merged decoder"));
    read.insert(read.end(), document.merged->present.begin(), document.merged->present.end());
    ONNXPROOF_TRY(check_names(*merged, document.logits, fed_names(document, true), read, document.merged->model));
  }
  if (document.first) {
    ONNXPROOF_TRY_ASSIGN(first, open_recorded(run_folder / document.first->model, document.first->sha256, options,
                                              digest, "first-step decoder"));
    ONNXPROOF_TRY(check_names(*first, document.first->logits, first_fed_names(*document.first), document.first->handoff,
                              document.first->model));
  }
  const std::string source = source_title(framework);
  std::vector<GenerationResult> results;
  for (const auto& run : document.runs) {
    ONNXPROOF_TRY_ASSIGN(const RunReference reference,
                         read_run_reference(reference_folder / run.folder, document, run));
    for (Session* decoder : {&session, merged ? &*merged : nullptr}) {
      if (!decoder) continue;
      const bool is_merged = decoder != &session;
      GenerationResult result =
          result_for(document, reference, options, tolerance, is_merged ? document.merged->model : "");
      std::map<std::string, Tensor> encoded;
      if (encoder) {  // the encoder's outputs are judged once per run, with the decoder's own loop
        ONNXPROOF_TRY_ASSIGN(encoded,
                             run_encoder(*encoder, *document.encoder, reference, tolerance, !is_merged, result));
      } else if (document.encoder) {
        encoded = recorded_encoding(*document.encoder, reference);
      }
      ONNXPROOF_TRY_ASSIGN(LoopFeeds loop, loop_feeds(document, reference, encoded, is_merged));
      if (!is_merged && first) loop.first = &*first;
      ONNXPROOF_TRY(run_loop(*decoder, document, reference, std::move(loop), tolerance, result));
      add_generation_findings(result, source);
      results.push_back(std::move(result));
    }
  }
  return results;
}

}  // namespace onnxproof
