// The proof of a simplification, and the whole job on files: simplify, save, prove, publish.

#include "onnxproof/simplify/simplify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <random>

#include "culprit.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/parity/random_outputs.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

namespace {

// Generated proof inputs are held in memory (twice: one case per symbolic size); a declared
// shape no machine holds is a clear error before any allocation, not std::bad_alloc.
Expected<void> require_generated_inputs_fit(const Session& session) {
  constexpr uint64_t k_max_generated_bytes = uint64_t{1} << 30;
  uint64_t total = 0;
  for (const auto& input : session.inputs()) {
    uint64_t count = 1;
    for (const int64_t dim : input.shape) {
      const auto size = static_cast<uint64_t>(dim >= 0 ? std::max<int64_t>(dim, 1) : 3);
      count = count > k_max_generated_bytes / size ? k_max_generated_bytes + 1 : count * size;
    }
    const uint64_t bytes = count > k_max_generated_bytes ? count : dtype_storage_bytes(input.dtype, count);
    total += std::min(bytes, k_max_generated_bytes + 1);
    if (total > k_max_generated_bytes) {
      return fail(ErrorCode::limit_exceeded, "input '" + input.name + "' is " + format_shape(input.shape) +
                                                 ": the generated proof inputs would take over 1 GiB; prove on "
                                                 "real inputs of a size you choose with --reference DIR");
    }
  }
  return {};
}

// The simplified model's output against the original's, by the rule parity judges with: a random
// output by its domain; with PyTorch's float64 reference, the calibrated rule, the noise the larger
// of the original's distance from exact and PyTorch's (a fold may round where the original did
// not); else the fixed or user rule.
Comparison simplification_comparison(const Reference* reference, const ReferenceCase& c, const std::string& name,
                                     std::size_t k, const Tensor& original, const Tensor& simplified,
                                     const ToleranceOptions& tolerance) {
  if (reference && reference->random_outputs.contains(name)) return compare_domain(original, simplified);
  const Tensor* exact = reference && !tolerance.overridden(name) ? exact_output(c, name, k) : nullptr;
  const NamedTensor* pytorch = k < c.outputs.size() ? &c.outputs[k] : nullptr;
  if (!exact || !pytorch || !exact_applies(original, *exact) || !exact_applies(pytorch->tensor, *exact))
    return tolerance.compare(name, original, simplified);
  ExactDeviation deviation;
  return compare_calibrated(original, *exact, simplified, relative_noise(pytorch->tensor, *exact), deviation);
}

}  // namespace

Expected<SimplifyProof> prove_simplification(const std::filesystem::path& original,
                                             const std::filesystem::path& simplified, const Reference* reference,
                                             const ToleranceOptions& tolerance) {
  // Both graphs as written (ONNX Runtime's optimizations off): the proof is about what the passes
  // did, and the parity step proves the runtime's optimizations on their own. It also spares the
  // optimizer's time on a large original (11.5 s of 12 for a 100,000-node graph).
  const SessionOptions as_written{.optimization = GraphOptimization::disabled};
  // One session at a time: a large model is never held twice by ONNX Runtime.
  ONNXPROOF_TRY_ASSIGN(auto opened, Session::open(original, lean_for_large_model(original, as_written)));
  std::optional<Session> before(std::move(opened));
  Reference generated;
  if (!reference) {
    // Inputs for every declared shape: symbolic dimensions at 1 and at 3.
    ONNXPROOF_TRY(require_generated_inputs_fit(*before));
    std::mt19937 random(0);
    std::normal_distribution<float> normal;
    for (const int64_t symbolic : {1, 3}) {
      ReferenceCase c;
      c.data_set = fmt::format("generated_{}", symbolic);
      for (const auto& input : before->inputs()) {
        if (!input.is_tensor) return fail(ErrorCode::unsupported, "input '" + input.name + "' is not a tensor");
        std::vector<int64_t> shape;
        for (const int64_t dim : input.shape) shape.push_back(dim >= 0 ? dim : symbolic);
        ONNXPROOF_TRY_ASSIGN(auto tensor, Tensor::zeros(input.dtype, shape));
        if (input.dtype == DType::float32) {
          for (float& v : tensor.mutable_values<float>()) v = normal(random);
        }
        c.inputs.push_back({input.name, std::move(tensor)});
      }
      generated.cases.push_back(std::move(c));
    }
  }
  const Reference& cases = reference ? *reference : generated;
  std::vector<std::optional<std::vector<Tensor>>> expected_outputs;
  std::vector<std::string> output_names;
  for (const auto& value : before->outputs()) output_names.push_back(value.name);
  for (const auto& c : cases.cases) {
    auto outputs = run_case(*before, c);  // a case the original cannot run either proves nothing
    expected_outputs.push_back(outputs ? std::optional(std::move(*outputs)) : std::nullopt);
  }
  before.reset();  // released before the simplified model is loaded
  SimplifyProof proof;
  auto opened_after = Session::open(simplified, lean_for_large_model(simplified, as_written));
  if (!opened_after) {
    // The original loads and the simplified model does not: the passes broke it, a finding.
    proof.findings.push_back({FindingCode::simplify_changed_outputs, Severity::error, "simplify",
                              "ONNX Runtime refuses the simplified model: " + opened_after.error().describe(), "",
                              "report it: a pass broke the model"});
    return proof;
  }
  Session after = std::move(*opened_after);
  for (std::size_t index = 0; index < cases.cases.size(); ++index) {
    const auto& c = cases.cases[index];
    if (!expected_outputs[index]) continue;
    const auto& expected = *expected_outputs[index];
    auto actual = run_case(after, c);
    ++proof.cases;
    if (!actual) {
      proof.findings.push_back(
          {FindingCode::simplify_changed_outputs, Severity::error, "simplify",
           "the simplified model fails where the original runs (" + c.data_set + "): " + actual.error().describe(),
           c.data_set, "report it: a pass broke the model"});
      continue;
    }
    for (std::size_t k = 0; k < expected.size() && k < actual->size(); ++k) {
      const auto& name = output_names[k];
      const auto comparison = simplification_comparison(reference, c, name, k, expected[k], (*actual)[k], tolerance);
      proof.max_abs = std::max(proof.max_abs, comparison.max_abs);
      if (!comparison.allclose) {
        proof.findings.push_back({FindingCode::simplify_changed_outputs, Severity::error, "simplify",
                                  fmt::format("output '{}' changed in {}: {}", name, c.data_set, comparison.describe()),
                                  name, "the simplified model is not used; report the model so the pass can be fixed"});
      }
    }
  }
  return proof;
}

// The input's external data files hard-linked into `staging` when the output goes into the input's
// own folder: the candidate written there refers to the weights no rule changed instead of copying
// them (SaveOptions::shared_sources), and loads from staging as it will from the folder. False where
// the files cannot be linked (another file system): the candidate then holds its own copy.
bool link_shared_weights(const LoadedModel& model, const std::filesystem::path& output,
                         const std::filesystem::path& staging) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (model.external_sources.empty() || !fs::equivalent(fs::absolute(output).parent_path(), model.folder, ec))
    return false;
  for (const auto& file : model.external_files) {
    const fs::path target = staging / file.lexically_relative(model.folder);
    fs::create_directories(target.parent_path(), ec);
    fs::create_hard_link(file, target, ec);
    if (ec) return false;
  }
  return true;
}

Expected<SimplifyOutcome> simplify_file(const std::filesystem::path& input, const std::filesystem::path& output,
                                        const SimplifyOptions& options, const Reference* reference,
                                        const ToleranceOptions& tolerance, bool copy_when_unchanged) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(output, ec) && fs::equivalent(output, input, ec)) {
    return fail(ErrorCode::usage, "the output must not be the input model: onnxproof never modifies its input");
  }
  // Whatever happens (SIGINT included), the private folder goes: on success its files have been
  // moved out first.
  ONNXPROOF_TRY_ASSIGN(const auto staging, StagingFolder::create(output));
  const fs::path candidate = staging.path() / output.filename();

  SimplifyOutcome outcome;
  {  // the model lives only in this scope: it is gone before ONNX Runtime loads anything
    auto model = load_model(input, LoadOptions{.load_external_data = true});
    if (!model) return std::unexpected(std::move(model.error()));
    // Neither -o nor the external data file written beside it may be one of the input's files.
    const auto inputs = model_inputs(*model);
    ONNXPROOF_TRY(require_output_apart(output, inputs, "-o"));
    ONNXPROOF_TRY(require_output_apart(output.string() + ".data", inputs, "-o's data file"));
    auto result = simplify_model(model->proto, options);
    if (!result && result.error().code() == ErrorCode::internal) {
      // The passes wrote a model the checker or strict shape inference rejects: onnxproof's
      // defect, reported as a finding naming the pass, and nothing is written.
      outcome.proof.findings.push_back({FindingCode::simplify_changed_outputs, Severity::error, "simplify",
                                        result.error().describe(), "", "report it: a pass broke the model"});
      ONNXPROOF_TRY(simplify::name_the_rule(input, staging.path(), options, reference, tolerance, outcome));
      return outcome;
    }
    if (!result) return std::unexpected(std::move(result.error()));
    outcome.result = std::move(*result);
    if (!outcome.result.changed() && !copy_when_unchanged) return outcome;
    // An input with external data keeps it: ONNX Runtime maps such weights from the file instead
    // of copying them into its own memory.
    const bool external = !model->external_files.empty();
    const bool shared = link_shared_weights(*model, output, staging.path());
    ONNXPROOF_TRY(
        save_model(model->proto, candidate,
                   SaveOptions{.external = external ? SaveOptions::External::always : SaveOptions::External::automatic,
                               .shared_sources = shared ? &model->external_sources : nullptr,
                               .shared_folder = shared ? staging.path() : std::filesystem::path{}}));
  }
  if (outcome.result.changed() && !options.proved_by_caller) {  // an unchanged model needs no proof
    ONNXPROOF_TRY_ASSIGN(outcome.proof, prove_simplification(input, candidate, reference, tolerance));
    if (has_errors(outcome.proof.findings)) {
      ONNXPROOF_TRY(simplify::name_the_rule(input, staging.path(), options, reference, tolerance, outcome));
      return outcome;
    }
    if (outcome.proof.cases == 0) return outcome;
  }

  const fs::path data = candidate.string() + ".data";
  if (auto written = load_model(candidate)) {  // the weights it shares with the input, by name
    for (const auto& file : written->external_files)
      if (file.filename() != data.filename()) outcome.shared_data.push_back(file.lexically_relative(written->folder));
  }
  if (fs::exists(data)) fs::rename(data, output.string() + ".data", ec);
  if (!ec) fs::rename(candidate, output, ec);
  if (ec) return fail(ErrorCode::io, "cannot write " + output.string() + ": " + ec.message());
  outcome.written = true;
  return outcome;
}

}  // namespace onnxproof
