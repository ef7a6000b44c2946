// The manager: the rules of a run (built-in and the caller's) grouped by pass, run in rounds
// until a round changes nothing (at most max_rounds), each rule counted on its own; then the
// result must pass the ONNX checker and strict shape inference.

#include "onnxproof/simplify/simplify.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "onnxproof/model/model_io.h"
#include "passes.h"

namespace onnxproof {
namespace {

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

// The rules of one run: the built-in ones, and each of the caller's after the built-in ones of
// its pass (a new pass at the end).
std::vector<Rule> rules_of_run(const SimplifyOptions& options) {
  std::vector<Rule> rules = builtin_rules();
  for (const auto& extra : options.extra_rules) {
    const auto last = std::find_if(rules.rbegin(), rules.rend(), [&](const Rule& r) { return r.pass == extra.pass; });
    rules.insert(last.base(), extra);
  }
  return rules;
}

// A name not in `known` is a usage error that lists the names.
Expected<void> require_known(const std::set<std::string>& asked, const std::vector<std::string>& known,
                             std::string_view option, std::string_view kind) {
  for (const auto& name : asked) {
    if (std::find(known.begin(), known.end(), name) == known.end())
      return fail(ErrorCode::usage, fmt::format("{} {}: no such {} ({})", option, name, kind, fmt::join(known, ", ")));
  }
  return {};
}

Expected<void> check_rules(const std::vector<Rule>& rules, const SimplifyOptions& options) {
  std::vector<std::string> passes, names;
  for (const auto& rule : rules) {
    if (std::find(names.begin(), names.end(), rule.name) != names.end())
      return fail(ErrorCode::usage, "two simplify rules are named " + rule.name);
    const bool node_rule = !rule.targets.empty() && rule.condition && rule.apply;
    if (!node_rule && !(rule.targets.empty() && rule.run))
      return fail(ErrorCode::usage, "the simplify rule " + rule.name + " needs targets, condition and apply, or run");
    names.push_back(rule.name);
    if (std::find(passes.begin(), passes.end(), rule.pass) == passes.end()) passes.push_back(rule.pass);
  }
  ONNXPROOF_TRY(require_known(options.skip_passes, passes, "--skip-pass", "pass"));
  return require_known(options.skip_rules, names, "--skip-rule", "rule");
}

// Whether a round runs the rule: the model holds an operator it needs (or it needs none).
bool applies(const Rule& rule, const std::map<std::string, int>& ops) {
  const auto& needed = rule.needs.empty() ? rule.targets : rule.needs;
  return needed.empty() || std::any_of(needed.begin(), needed.end(), [&](const auto& op) { return ops.contains(op); });
}

bool skipped(const Rule& rule, const SimplifyOptions& options) {
  return options.skip_passes.contains(rule.pass) || options.skip_rules.contains(rule.name);
}

// One pass of a round: its node rules in one walk, then its whole-model rules in order; each
// rule's changes counted in `result.rules` (indexed like `rules`), the sum in the pass.
Expected<int> run_pass(onnx::ModelProto& model, std::size_t pass, const std::vector<Rule>& rules,
                       const SimplifyOptions& options, SimplifyResult& result) {
  const auto ops = count_ops(model);
  std::vector<std::size_t> chosen;
  for (std::size_t k = 0; k < rules.size(); ++k) {
    if (rules[k].pass == result.passes[pass].name && !skipped(rules[k], options) && applies(rules[k], ops))
      chosen.push_back(k);
  }
  if (chosen.empty()) return 0;
  infer_shapes(model);
  std::vector<const Rule*> node_rules;
  std::vector<std::size_t> node_rule_index;
  for (const std::size_t k : chosen) {
    if (rules[k].targets.empty()) continue;
    node_rules.push_back(&rules[k]);
    node_rule_index.push_back(k);
  }
  std::vector<int> walked(node_rules.size(), 0);
  int total = simplify::walk_node_rules(model, node_rules, walked);
  for (std::size_t j = 0; j < walked.size(); ++j) result.rules[node_rule_index[j]].changes += walked[j];
  for (const std::size_t k : chosen) {
    if (!rules[k].targets.empty()) continue;
    auto changed = rules[k].run(model, options, result.passes[pass].notes);
    if (!changed) return std::unexpected(std::move(changed.error().add_context("rule " + rules[k].name)));
    result.rules[k].changes += *changed;
    total += *changed;
  }
  result.passes[pass].changes += total;
  return total;
}

// The report's rows, every rule and pass at 0, with the skips noted.
void list_rules(const std::vector<Rule>& rules, const SimplifyOptions& options, SimplifyResult& result) {
  for (const auto& rule : rules) {
    if (result.passes.empty() || result.passes.back().name != rule.pass) {
      result.passes.push_back({rule.pass, 0});
      if (options.skip_passes.contains(rule.pass)) result.passes.back().notes.push_back("skipped (--skip-pass)");
    }
    result.rules.push_back({rule.name, rule.pass, 0});
    if (options.skip_rules.contains(rule.name))
      result.passes.back().notes.push_back("rule " + rule.name + " skipped (--skip-rule)");
  }
}

// The last round's folds and merges leave dead nodes when the rounds ran out: one more sweep.
void sweep_dead_code(onnx::ModelProto& model, const std::vector<Rule>& rules, const SimplifyOptions& options,
                     SimplifyResult& result) {
  for (std::size_t k = 0; k < rules.size(); ++k) {
    if (rules[k].name != "remove-dead-code" || skipped(rules[k], options)) continue;
    const int changes = simplify::eliminate_dead_code(model);
    result.rules[k].changes += changes;
    for (auto& pass : result.passes) {
      if (pass.name == rules[k].pass) pass.changes += changes;
    }
  }
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

namespace {

// What the ONNX checker says is wrong with `model`; empty when it accepts it.
std::string checker_problem(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    return error.what();
  }
  return {};
}

// What strict shape inference says is wrong with `model`; empty when shapes propagate. It writes
// into the model, so it runs on a copy made while the large tensors' bytes are moved out (it
// reads their dims, not their values): weights are never held twice.
std::string shape_inference_problem(const onnx::ModelProto& model) {
  onnx::ModelProto copy = copy_without_large_tensors(model);
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& error) {
    return error.what();
  }
  return {};
}

}  // namespace

Expected<SimplifyResult> simplify_model(onnx::ModelProto& model, const SimplifyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SimplifyResult result;
  result.ops_before = count_ops(model);
  result.bytes_before = model.ByteSizeLong();
  const std::vector<Rule> rules = rules_of_run(options);
  ONNXPROOF_TRY(check_rules(rules, options));
  list_rules(rules, options, result);

  simplify::sort_topologically(model);
  // Kept to tell whose fault an invalid result is: the passes may repair what the checker
  // minds (a graph output's missing shape), so the input's problems count only when the result
  // fails too. The checker runs on the model itself: it refuses a copy without the tensors' bytes.
  const std::string input_problem = checker_problem(model);
  const onnx::ModelProto original = copy_without_large_tensors(model);
  for (int round = 0; round < options.max_rounds; ++round) {
    ++result.rounds;
    int changes = 0;
    for (std::size_t pass = 0; pass < result.passes.size(); ++pass) {
      if (options.skip_passes.contains(result.passes[pass].name)) continue;
      ONNXPROOF_TRY_ASSIGN(const int changed, run_pass(model, pass, rules, options, result));
      changes += changed;
    }
    if (changes == 0) break;
  }
  sweep_dead_code(model, rules, options, result);
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

  // The result must be a valid model with shapes that propagate, or no result at all. When the
  // input fails the same way, that is the user's to fix, not a pass's defect to bisect.
  if (std::string problem = checker_problem(model); !problem.empty()) {
    if (!input_problem.empty())
      return fail(ErrorCode::invalid_input,
                  "the input model is invalid, so it is not simplified (onnxproof check says more): " + input_problem);
    return fail(ErrorCode::internal, "the simplified model is invalid: " + problem);
  }
  if (std::string problem = shape_inference_problem(model); !problem.empty()) {
    if (const std::string own = shape_inference_problem(original); !own.empty())
      return fail(ErrorCode::invalid_input,
                  "the input model fails strict shape inference, so it is not simplified: " + own);
    return fail(ErrorCode::internal, "the simplified model is invalid: " + problem);
  }
  result.ops_after = count_ops(model);
  result.bytes_after = model.ByteSizeLong();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace onnxproof
