#include "onnxproof/simplify/simplify.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <set>
#include <span>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/staging.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"
#include "passes.h"

namespace onnxproof {

namespace {

using simplify::eliminate_dead_code;

std::map<std::string, int> count_ops(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) ++counts[node.op_type()];
  });
  return counts;
}

// Shape information for the passes that need it; a model shape inference cannot fully handle is
// still simplified with what it could infer.
void infer_shapes(onnx::ModelProto& model) {
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception&) {
  }
}

// The operators each rule rewrites; a round skips a rule when the model holds none of them.
constexpr std::string_view k_no_op_candidates[] = {"Identity", "Dropout",   "Cast", "Reshape", "Expand",
                                                   "Slice",    "Transpose", "Pad",  "Concat",  "Add",
                                                   "Sub",      "Mul",       "Div",  "And",     "Or"};
constexpr std::string_view k_shape_queries[] = {"Shape", "Size"};  // and the Gathers and Reshapes that read one
constexpr std::string_view k_fusion_candidates[] = {"Transpose", "Reshape", "Cast",  "BatchNormalization", "Add", "Mul",
                                                    "Unsqueeze", "Slice",   "MatMul"};

// The rules, in the order one round runs them. Adding a rule is adding a line here (and its
// file, declared in passes.h); each is counted on its own in the report.
struct PassDefinition {
  std::string_view name;
  std::span<const std::string_view> applies_to;  // empty: any operator
  Expected<int> (*run)(onnx::ModelProto&, const SimplifyOptions&, PassReport&);
};
constexpr PassDefinition k_passes[] = {
    {"dead-code",
     {},
     [](onnx::ModelProto& m, const SimplifyOptions&, PassReport&) -> Expected<int> {
       return simplify::eliminate_dead_code(m);
     }},
    {"no-ops", k_no_op_candidates,
     [](onnx::ModelProto& m, const SimplifyOptions&, PassReport&) -> Expected<int> {
       return simplify::remove_no_ops(m);
     }},
    {"shape-folding", k_shape_queries,
     [](onnx::ModelProto& m, const SimplifyOptions&, PassReport&) -> Expected<int> {
       return simplify::fold_shapes(m);
     }},
    {"constant-folding", {}, simplify::fold_constants},
    {"common-subexpressions",
     {},
     [](onnx::ModelProto& m, const SimplifyOptions&, PassReport&) -> Expected<int> {
       return simplify::merge_common_subexpressions(m);
     }},
    {"fusions", k_fusion_candidates,
     [](onnx::ModelProto& m, const SimplifyOptions&, PassReport&) -> Expected<int> { return simplify::fuse_nodes(m); }},
};

std::string pass_names() {
  std::string names;
  for (const auto& pass : k_passes) names += (names.empty() ? "" : ", ") + std::string(pass.name);
  return names;
}

bool applies(const PassDefinition& pass, const std::map<std::string, int>& ops) {
  return pass.applies_to.empty() || std::any_of(pass.applies_to.begin(), pass.applies_to.end(),
                                                [&](auto op) { return ops.contains(std::string(op)); });
}

}  // namespace

int SimplifyResult::nodes_before() const {
  int count = 0;
  for (const auto& [op, n] : ops_before) count += n;
  return count;
}

int SimplifyResult::nodes_after() const {
  int count = 0;
  for (const auto& [op, n] : ops_after) count += n;
  return count;
}

bool SimplifyResult::changed() const {
  return std::any_of(passes.begin(), passes.end(), [](const PassReport& p) { return p.changes > 0; });
}

Expected<SimplifyResult> simplify_model(onnx::ModelProto& model, const SimplifyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SimplifyResult result;
  result.ops_before = count_ops(model);
  result.bytes_before = model.ByteSizeLong();
  for (const auto& skipped : options.skip_passes) {
    if (std::none_of(std::begin(k_passes), std::end(k_passes), [&](const auto& pass) { return pass.name == skipped; }))
      return fail(ErrorCode::usage, "--skip-pass " + skipped + ": no such pass (" + pass_names() + ")");
  }
  for (const auto& pass : k_passes) {
    result.passes.push_back({std::string(pass.name), 0});
    if (options.skip_passes.contains(std::string(pass.name)))
      result.passes.back().notes.push_back("skipped (--skip-pass)");
  }

  simplify::sort_topologically(model);
  for (int round = 0; round < options.max_rounds; ++round) {
    ++result.rounds;
    int changes = 0;
    for (std::size_t p = 0; p < std::size(k_passes); ++p) {
      if (options.skip_passes.contains(std::string(k_passes[p].name)) || !applies(k_passes[p], count_ops(model)))
        continue;
      infer_shapes(model);
      auto changed = k_passes[p].run(model, options, result.passes[p]);
      if (!changed)
        return std::unexpected(std::move(changed.error().add_context("pass " + std::string(k_passes[p].name))));
      result.passes[p].changes += *changed;
      changes += *changed;
    }
    if (changes == 0) break;
  }
  // The last round's folds and merges leave dead nodes when the rounds ran out: one more sweep.
  if (!options.skip_passes.contains("dead-code")) result.passes.front().changes += simplify::eliminate_dead_code(model);
  simplify::sort_topologically(model);
  // IR version 3 required every initializer to be a graph input; folded constants are not, and
  // IR version 4 dropped that rule and nothing else: such a model is stamped 4.
  if (model.ir_version() < 4) {
    std::set<std::string> inputs;
    for (const auto& input : model.graph().input()) inputs.insert(input.name());
    for (const auto& initializer : model.graph().initializer()) {
      if (!inputs.contains(initializer.name())) model.set_ir_version(4);
    }
  }

  // The result must be a valid model with shapes that propagate, or no result at all. Strict
  // shape inference writes into the model, so it runs on a copy made while the large tensors'
  // bytes are moved out (shape inference reads their dims, not their values): weights are never
  // held twice.
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    return fail(ErrorCode::internal, std::string("the simplified model is invalid: ") + error.what());
  }
  onnx::ModelProto copy = copy_without_large_tensors(model);
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& error) {
    return fail(ErrorCode::internal, std::string("the simplified model is invalid: ") + error.what());
  }
  result.ops_after = count_ops(model);
  result.bytes_after = model.ByteSizeLong();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

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

}  // namespace

Expected<SimplifyProof> prove_simplification(const std::filesystem::path& original,
                                             const std::filesystem::path& simplified, const Reference* reference,
                                             const ToleranceOptions& tolerance) {
  // Both graphs as written (ONNX Runtime's optimizations off): the proof is about what the passes
  // did, and the parity step proves the runtime's optimizations on their own. It also spares the
  // optimizer's time on a large original (11.5 s of 12 for a 100,000-node graph).
  const SessionOptions as_written{.optimization = GraphOptimization::disabled};
  // One session at a time: a large model is never held twice by ONNX Runtime.
  ONNXPROOF_TRY_ASSIGN(auto opened, Session::open(original, as_written));
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
  auto opened_after = Session::open(simplified, as_written);
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
      const auto comparison = compare_tensors(expected[k], (*actual)[k], tolerance.resolve(name, expected[k].dtype()));
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

namespace {

// Whether the proof holds when `pass` is skipped (unchanged without it counts: the pass alone
// made the change).
Expected<bool> holds_without(const std::string& pass, const std::filesystem::path& input,
                             const std::filesystem::path& folder, const SimplifyOptions& options,
                             const Reference* reference, const ToleranceOptions& tolerance) {
  SimplifyOptions without = options;
  without.skip_passes.insert(pass);
  const std::filesystem::path candidate = folder / ("without-" + pass + ".onnx");
  {
    ONNXPROOF_TRY_ASSIGN(auto model, load_model(input, LoadOptions{.load_external_data = true}));
    const auto result = simplify_model(model.proto, without);
    if (!result) return false;  // still invalid without it
    if (!result->changed()) return true;
    ONNXPROOF_TRY(save_model(model.proto, candidate));
  }
  ONNXPROOF_TRY_ASSIGN(const auto proof, prove_simplification(input, candidate, reference, tolerance));
  return !has_errors(proof.findings) && proof.cases > 0;
}

// After a failed proof or an invalid result: the passes whose skipping alone makes the proof hold,
// rerun one pass at a time (those that changed something; every pass when the passes wrote an
// invalid model and left no counts); the findings then name them. Every pass is tried, the rule
// passes before dead-code: removing what nothing reads changes which nodes the others see, so
// skipping it can hide another pass's defect, and naming only that would point at the wrong code.
Expected<void> name_the_pass(const std::filesystem::path& input, const std::filesystem::path& folder,
                             const SimplifyOptions& options, const Reference* reference,
                             const ToleranceOptions& tolerance, SimplifyOutcome& outcome) {
  std::vector<PassReport> suspects = outcome.result.passes;
  if (suspects.empty()) {
    for (const auto& pass : k_passes) suspects.push_back({std::string(pass.name), 1});
  }
  std::stable_partition(suspects.begin(), suspects.end(), [](const PassReport& p) { return p.name != "dead-code"; });
  std::vector<std::string> culprits;
  for (const auto& pass : suspects) {
    if (pass.changes == 0 || options.skip_passes.contains(pass.name)) continue;
    ONNXPROOF_TRY_ASSIGN(const bool holds, holds_without(pass.name, input, folder, options, reference, tolerance));
    if (holds) culprits.push_back(pass.name);
  }
  if (culprits.empty()) return {};
  outcome.culprit_pass = culprits.front();
  std::string named = fmt::format("the pass '{}' makes the change: without it the proof holds", culprits[0]);
  if (culprits.size() > 1)
    named += fmt::format(", as it does without any one of {}", fmt::join(std::span(culprits).subspan(1), ", "));
  for (auto& finding : outcome.proof.findings) {
    if (finding.code != FindingCode::simplify_changed_outputs) continue;
    finding.message += " (" + named + ")";
    finding.hint = fmt::format("simplify --skip-pass {} keeps the rest of the simplification", culprits[0]);
  }
  return {};
}

}  // namespace

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
    const auto inputs = model_files(*model);
    ONNXPROOF_TRY(require_not_an_input(output, inputs, "-o"));
    ONNXPROOF_TRY(require_not_an_input(output.string() + ".data", inputs, "-o's data file"));
    ONNXPROOF_TRY(require_replaceable_file(output));
    auto result = simplify_model(model->proto, options);
    if (!result && result.error().code() == ErrorCode::internal) {
      // The passes wrote a model the checker or strict shape inference rejects: onnxproof's
      // defect, reported as a finding naming the pass, and nothing is written.
      outcome.proof.findings.push_back({FindingCode::simplify_changed_outputs, Severity::error, "simplify",
                                        result.error().describe(), "", "report it: a pass broke the model"});
      ONNXPROOF_TRY(name_the_pass(input, staging.path(), options, reference, tolerance, outcome));
      return outcome;
    }
    if (!result) return std::unexpected(std::move(result.error()));
    outcome.result = std::move(*result);
    if (!outcome.result.changed() && !copy_when_unchanged) return outcome;
    ONNXPROOF_TRY(save_model(model->proto, candidate));
  }
  if (outcome.result.changed()) {  // an unchanged model needs no proof
    ONNXPROOF_TRY_ASSIGN(outcome.proof, prove_simplification(input, candidate, reference, tolerance));
    if (has_errors(outcome.proof.findings)) {
      ONNXPROOF_TRY(name_the_pass(input, staging.path(), options, reference, tolerance, outcome));
      return outcome;
    }
    if (outcome.proof.cases == 0) return outcome;
  }

  const fs::path data = candidate.string() + ".data";
  if (fs::exists(data)) fs::rename(data, output.string() + ".data", ec);
  if (!ec) fs::rename(candidate, output, ec);
  if (ec) return fail(ErrorCode::io, "cannot write " + output.string() + ": " + ec.message());
  outcome.written = true;
  return outcome;
}

}  // namespace onnxproof
