// The rule registry: every rule fires on a model built for it, and skipping it (--skip-rule, in
// the library and on the command line) keeps what it rewrites; a planted wrong rule is caught by
// the proof and named; the report lists the rules that changed something, with their counts.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "cli_runner.h"
#include "graph_builder.h"
#include "onnxproof/report/report.h"
#include "onnxproof/report/simplify_report.h"
#include "onnxproof/report/step_figures.h"
#include "onnxproof/simplify/rules.h"
#include "onnxproof/simplify/simplify.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

constexpr int32_t k_int64 = onnx::TensorProto::INT64;

// x (float, `in`) -> the caller's nodes -> y (float, `out`), opset 17.
onnx::ModelProto chain(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, in)}, tensor_value("y", k_float, out));
  model.mutable_graph()->clear_node();
  return model;
}

void ints(onnx::ModelProto& model, const std::string& name, const std::vector<int64_t>& values) {
  add_initializer(model, name, k_int64, {static_cast<int64_t>(values.size())}, {}, values);
}

// x (2x3) -> `op`(x, extra inputs) -> Relu -> y: a no-op the rule removes.
onnx::ModelProto no_op(const std::string& op, std::vector<std::string> extra,
                       const std::function<void(onnx::ModelProto&, onnx::NodeProto*)>& finish) {
  auto model = chain({2, 3}, {2, 3});
  extra.insert(extra.begin(), "x");
  finish(model, add_node(model, op, extra, {"n"}));
  add_node(model, "Relu", {"n"}, {"y"});
  return model;
}

// x (N x 4) * Cast(`op`(Shape(x), ...)) -> y: a size read from a partly symbolic shape.
onnx::ModelProto scaled_by_size(const std::string& op, const std::vector<std::string>& extra,
                                const std::function<void(onnx::ModelProto&)>& constants) {
  auto model = chain({-1, 4}, {-1, 4});
  constants(model);
  add_node(model, "Shape", {"x"}, {"s"});
  std::vector<std::string> inputs{"s"};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  add_node(model, op, inputs, {"g"});
  add_int(add_node(model, "Cast", {"g"}, {"c"}), "to", k_float);
  add_node(model, "Mul", {"x", "c"}, {"y"});
  return model;
}

std::map<std::string, std::function<onnx::ModelProto()>> no_op_models() {
  const auto none = [](onnx::ModelProto&, onnx::NodeProto*) {};
  return {
      {"remove-identity", [=] { return no_op("Identity", {}, none); }},
      {"remove-inference-dropout", [=] { return no_op("Dropout", {}, none); }},
      {"remove-same-type-cast",
       [] { return no_op("Cast", {}, [](auto&, auto* node) { add_int(node, "to", k_float); }); }},
      {"remove-no-op-expand",
       [] { return no_op("Expand", {"ones"}, [](auto& model, auto*) { ints(model, "ones", {1, 1}); }); }},
      {"remove-same-shape-reshape",
       [] { return no_op("Reshape", {"shape"}, [](auto& model, auto*) { ints(model, "shape", {2, 3}); }); }},
      {"remove-whole-slice",
       [] {
         return no_op("Slice", {"starts", "ends"}, [](auto& model, auto*) {
           ints(model, "starts", {0, 0});
           ints(model, "ends", {2, 3});
         });
       }},
      {"remove-identity-transpose",
       [] { return no_op("Transpose", {}, [](auto&, auto* node) { add_ints(node, "perm", {0, 1}); }); }},
      {"remove-zero-pad",
       [] { return no_op("Pad", {"pads"}, [](auto& model, auto*) { ints(model, "pads", {0, 0, 0, 0}); }); }},
      {"remove-single-input-concat",
       [] { return no_op("Concat", {}, [](auto&, auto* node) { add_int(node, "axis", 0); }); }},
      {"remove-identity-element",
       [] {
         return no_op("Add", {"zeros"},
                      [](auto& model, auto*) { add_initializer(model, "zeros", k_float, {3}, {0, 0, 0}); });
       }},
  };
}

std::map<std::string, std::function<onnx::ModelProto()>> folding_models() {
  return {
      {"remove-dead-code",
       [] {
         auto model = relu_model();
         add_node(model, "Neg", {"x"}, {"dead"});
         return model;
       }},
      {"fold-static-shape",
       [] {
         auto model = chain({2, 3}, {2, 3});
         add_node(model, "Relu", {"x"}, {"r"});
         add_node(model, "Shape", {"r"}, {"s"});
         add_node(model, "Reshape", {"r", "s"}, {"y"});
         return model;
       }},
      {"fold-gathered-static-dims",
       [] {
         return scaled_by_size("Gather", {"one"},
                               [](auto& model) { add_initializer(model, "one", k_int64, {}, {}, {1}); });
       }},
      {"fold-sliced-static-dims",
       [] {
         return scaled_by_size("Slice", {"start", "end"}, [](auto& model) {
           ints(model, "start", {1});
           ints(model, "end", {2});
         });
       }},
      {"fold-symbolic-reshape-shape",
       [] {
         auto model = chain({-1, 4, 6}, {-1, 24});
         add_initializer(model, "zero", k_int64, {}, {}, {0});
         ints(model, "axes", {0});
         ints(model, "width", {24});
         add_node(model, "Shape", {"x"}, {"s"});
         add_node(model, "Gather", {"s", "zero"}, {"n"});
         add_node(model, "Unsqueeze", {"n", "axes"}, {"n1"});
         add_int(add_node(model, "Concat", {"n1", "width"}, {"shape"}), "axis", 0);
         add_node(model, "Reshape", {"x", "shape"}, {"y"});
         return model;
       }},
      {"fold-reshape-to-shape-with-one-unknown",
       [] {
         auto model = chain({-1, 4, 6}, {-1, 4, 6});
         add_node(model, "Relu", {"x"}, {"r"});
         add_node(model, "Shape", {"x"}, {"s"});
         add_node(model, "Reshape", {"r", "s"}, {"y"});
         return model;
       }},
      {"decide-size-guard", [] { return expand_guard_model(-1, -1); }},
      {"fold-constants",
       [] {
         auto model = chain({2, 3}, {2, 3});
         add_initializer(model, "a", k_float, {3}, {1, 2, 3});
         add_initializer(model, "b", k_float, {3}, {0.5F, 0.5F, 0.5F});
         add_node(model, "Add", {"a", "b"}, {"c"});
         add_node(model, "Mul", {"x", "c"}, {"y"});
         return model;
       }},
      {"merge-common-subexpressions",
       [] {
         auto model = chain({2, 3}, {2, 3});
         add_node(model, "Relu", {"x"}, {"a"});
         add_node(model, "Relu", {"x"}, {"b"});
         add_node(model, "Add", {"a", "b"}, {"y"});
         return model;
       }},
  };
}

// `first`(x) -> `second` -> y, each with its attribute or constant inputs set by `finish`.
onnx::ModelProto pair(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::string& first,
                      const std::string& second,
                      const std::function<void(onnx::ModelProto&, onnx::NodeProto*, onnx::NodeProto*)>& finish) {
  auto model = chain(in, out);
  auto* a = add_node(model, first, {"x"}, {"m"});
  auto* b = add_node(model, second, {"m"}, {"y"});
  finish(model, a, b);
  return model;
}

std::map<std::string, std::function<onnx::ModelProto()>> fusion_models() {
  return {
      {"fuse-transposes",
       [] {
         return pair({2, 3, 4}, {3, 4, 2}, "Transpose", "Transpose", [](auto&, auto* a, auto* b) {
           add_ints(a, "perm", {1, 0, 2});
           add_ints(b, "perm", {0, 2, 1});
         });
       }},
      {"fuse-reshapes",
       [] {
         return pair({2, 3, 4}, {4, 6}, "Reshape", "Reshape", [](auto& model, auto* a, auto* b) {
           ints(model, "s1", {6, 4});
           ints(model, "s2", {4, 6});
           a->add_input("s1");
           b->add_input("s2");
         });
       }},
      {"fuse-widening-casts",
       [] {
         return pair({2, 3}, {2, 3}, "Cast", "Cast", [](auto&, auto* a, auto* b) {
           add_int(a, "to", onnx::TensorProto::DOUBLE);
           add_int(b, "to", k_float);
         });
       }},
      {"fuse-unsqueezes",
       [] {
         return pair({2, 3}, {1, 1, 2, 3}, "Unsqueeze", "Unsqueeze", [](auto& model, auto* a, auto* b) {
           ints(model, "axes", {0});
           a->add_input("axes");
           b->add_input("axes");
         });
       }},
      {"fuse-slices",
       [] {
         return pair({4, 6}, {2, 3}, "Slice", "Slice", [](auto& model, auto* a, auto* b) {
           ints(model, "s1", {0});
           ints(model, "e1", {2});
           ints(model, "a1", {0});
           ints(model, "s2", {1});
           ints(model, "e2", {4});
           ints(model, "a2", {1});
           for (const auto* name : {"s1", "e1", "a1"}) a->add_input(name);
           for (const auto* name : {"s2", "e2", "a2"}) b->add_input(name);
         });
       }},
      {"fuse-batch-norm-into-conv",
       [] { return conv_batch_norm_model(0.1F, {}, {{1, 2, 3}, {0.1F, 0.2F, 0.3F}, {0, 1, 0}, {1, 1, 4}}); }},
      {"fuse-mul-into-conv",
       [] {
         auto model = conv_model(0.1F, {0.1F, 0.2F, 0.3F});
         add_initializer(model, "gain", k_float, {1}, {2});
         add_node(model, "Mul", {"c", "gain"}, {"y"});
         return model;
       }},
      {"fuse-matmul-add-into-gemm",
       [] {
         auto model = chain({2, 3}, {2, 4});
         add_initializer(model, "w", k_float, {3, 4}, std::vector<float>(12, 0.5F));
         add_initializer(model, "b", k_float, {4}, {1, 2, 3, 4});
         add_node(model, "MatMul", {"x", "w"}, {"m"});
         add_node(model, "Add", {"m", "b"}, {"y"});
         return model;
       }},
      {"elide-reshapes-around-elementwise", [] { return reshapes_around_elementwise_model({-1, 6}, {-1, 6}); }},
      {"merge-parallel-matmuls",
       [] {
         auto model = chain({2, 3}, {2, 2});
         for (const std::string k : {"1", "2", "3"}) {
           add_initializer(model, "w" + k, k_float, {3, 2}, std::vector<float>(6, std::stof(k)));
           add_node(model, "MatMul", {"x", "w" + k}, {k == "1" ? "y" : "y" + k});
           if (k != "1") *model.mutable_graph()->add_output() = tensor_value("y" + k, k_float, {2, 2});
         }
         return model;
       }},
  };
}

// A model on which each built-in rule fires, by rule name.
std::map<std::string, std::function<onnx::ModelProto()>> model_for_each_rule() {
  auto models = no_op_models();
  models.merge(folding_models());
  models.merge(fusion_models());
  return models;
}

int changes_of(const SimplifyResult& result, const std::string& rule) {
  for (const auto& report : result.rules) {
    if (report.name == rule) return report.changes;
  }
  return -1;
}

int count_of(const onnx::ModelProto& model, const std::vector<std::string>& ops) {
  int n = 0;
  for (const auto& op : ops) n += count(model, op);
  return n;
}

TEST(Rules, EveryRuleFiresOnItsModelAndSkippingItKeepsWhatItRewrites) {
  const auto models = model_for_each_rule();
  EXPECT_EQ(models.size(), builtin_rules().size());
  for (const auto& rule : builtin_rules()) {
    SCOPED_TRACE(rule.name);
    const auto found = models.find(rule.name);
    ASSERT_NE(found, models.end()) << "add a model on which " << rule.name << " fires";
    const onnx::ModelProto model = found->second();
    onnx::ModelProto simplified = model;
    const auto fired = simplify_model(simplified, {});
    ASSERT_TRUE(fired) << fired.error().describe();
    EXPECT_GT(changes_of(*fired, rule.name), 0);
    simplify_and_prove(model);
    onnx::ModelProto kept = model;
    SimplifyOptions options;
    options.skip_rules = {rule.name};
    const auto skipped = simplify_model(kept, options);
    ASSERT_TRUE(skipped) << skipped.error().describe();
    EXPECT_EQ(changes_of(*skipped, rule.name), 0);
    // Its operator stays (a node rule), or more nodes do (a whole-model rule, or a rule that
    // rewires its node rather than removing it).
    const bool more_of_its_op = count_of(kept, rule.targets) > count_of(simplified, rule.targets);
    EXPECT_TRUE(more_of_its_op || kept.graph().node_size() > simplified.graph().node_size());
  }
}

TEST(Rules, NamesAreKebabCaseAndUniqueAndEachPassIsNamed) {
  std::set<std::string> names;
  for (const auto& rule : builtin_rules()) {
    EXPECT_TRUE(names.insert(rule.name).second) << rule.name;
    EXPECT_EQ(rule.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos) << rule.name;
  }
  EXPECT_EQ(pass_names(), (std::vector<std::string>{"dead-code", "no-ops", "shape-folding", "constant-folding",
                                                    "common-subexpressions", "fusions"}));
}

TEST(Rules, TheCommandLineAcceptsSkipRuleForEveryRuleAndRefusesOtherNames) {
  TempDir dir;
  write_bytes(dir / "m.onnx", no_op("Identity", {}, [](auto&, auto*) {}).SerializeAsString());
  for (const auto& rule : builtin_rules()) {
    const auto result = run_cli(ONNXPROOF_CLI, {"simplify", (dir / "m.onnx").string(), "-o", (dir / "s.onnx").string(),
                                                "--skip-rule", rule.name});
    EXPECT_EQ(result.exit_code, 0) << rule.name << ": " << result.err;
    // remove-identity is what simplifies this model: skipped, the Identity stays.
    const bool identity_stays = read_text(dir / "s.onnx").find("Identity") != std::string::npos;
    EXPECT_EQ(identity_stays, rule.name == "remove-identity") << rule.name;
  }
  expect_one_line_error(run_cli(ONNXPROOF_CLI, {"simplify", (dir / "m.onnx").string(), "-o", (dir / "s.onnx").string(),
                                                "--skip-rule", "fusions"}),
                        2, "--skip-rule fusions: no such rule (remove-dead-code, remove-identity,");
}

// y = x * 2, with a rule planted for the test that makes it x * 2.01: a wrong rewrite.
Rule wrong_mul_rule() {
  const auto is_two = [](const RuleContext& context, const std::string& name) {
    for (const auto& t : context.graph.initializer()) {
      if (t.name() == name) return t.float_data_size() == 1 && t.float_data(0) == 2.0F;
    }
    return false;
  };
  return Rule{.name = "planted-wrong-mul",
              .pass = "planted",
              .targets = {"Mul"},
              .condition =
                  [is_two](const RuleContext& context, const onnx::NodeProto& node) {
                    return node.input_size() == 2 && is_two(context, node.input(1));
                  },
              .apply =
                  [](RuleContext& context, onnx::NodeProto& node) {
                    onnx::TensorProto& nearly = context.added.emplace_back();
                    nearly.set_name("nearly_two");
                    nearly.set_data_type(k_float);
                    nearly.add_dims(1);
                    nearly.add_float_data(2.01F);
                    node.set_input(1, "nearly_two");
                    return 1;
                  }};
}

// x -> Identity -> Transpose -> Transpose -> Mul by 2 -> y: four rules fire, one of them wrong.
onnx::ModelProto doubling_model() {
  auto model = chain({2, 3}, {2, 3});
  add_initializer(model, "two", k_float, {1}, {2});
  add_node(model, "Identity", {"x"}, {"i"});
  add_ints(add_node(model, "Transpose", {"i"}, {"t1"}), "perm", {1, 0});
  add_ints(add_node(model, "Transpose", {"t1"}, {"t2"}), "perm", {1, 0});
  add_node(model, "Mul", {"t2", "two"}, {"y"});
  return model;
}

TEST(Rules, APlantedWrongRuleFailsTheProofWritesNothingAndIsNamed) {
  TempDir dir;
  write_bytes(dir / "model.onnx", doubling_model().SerializeAsString());
  SimplifyOptions options;
  options.extra_rules = {wrong_mul_rule()};
  const auto outcome = simplify_file(dir / "model.onnx", dir / "simplified.onnx", options, nullptr, {}, true);
  ASSERT_TRUE(outcome) << outcome.error().describe();
  EXPECT_GT(changes_of(outcome->result, "fuse-transposes"), 0);
  EXPECT_GT(changes_of(outcome->result, "planted-wrong-mul"), 0);
  EXPECT_FALSE(outcome->written);
  EXPECT_FALSE(std::filesystem::exists(dir / "simplified.onnx"));
  EXPECT_EQ(outcome->culprit_pass, "planted-wrong-mul");
  ASSERT_FALSE(outcome->proof.findings.empty());
  EXPECT_EQ(outcome->proof.findings[0].code, FindingCode::simplify_changed_outputs);
  EXPECT_NE(outcome->proof.findings[0].message.find("the rule 'planted-wrong-mul' makes the change"), std::string::npos)
      << outcome->proof.findings[0].message;
  EXPECT_NE(outcome->proof.findings[0].hint.find("--skip-rule planted-wrong-mul"), std::string::npos);
  // Skipped, the rest is proved and written.
  options.skip_rules = {"planted-wrong-mul"};
  const auto without = simplify_file(dir / "model.onnx", dir / "simplified.onnx", options, nullptr, {}, true);
  ASSERT_TRUE(without) << without.error().describe();
  EXPECT_TRUE(without->written);
}

TEST(Rules, TheReportListsTheRulesThatChangedSomethingWithTheirCounts) {
  TempDir dir;
  write_bytes(dir / "model.onnx", doubling_model().SerializeAsString());
  const auto outcome = simplify_file(dir / "model.onnx", dir / "simplified.onnx", {}, nullptr, {}, true);
  ASSERT_TRUE(outcome) << outcome.error().describe();
  ASSERT_TRUE(outcome->written);
  const auto json = simplify_outcome_to_json(*outcome);
  EXPECT_EQ(json["rules"]["remove-identity"], 1);
  EXPECT_EQ(json["rules"]["fuse-transposes"], 1);
  EXPECT_EQ(json["rules"]["remove-identity-transpose"], 1);
  EXPECT_FALSE(json["rules"].contains("fuse-reshapes"));  // only the rules that changed something
  EXPECT_EQ(json["passes"]["no-ops"], 2);                 // the passes' totals, as before
  std::ostringstream terminal;
  print_simplify_outcome(terminal, *outcome, dir / "simplified.onnx");
  EXPECT_NE(terminal.str().find("pass fusions"), std::string::npos) << terminal.str();
  EXPECT_NE(terminal.str().find("\n  rule fuse-transposes "), std::string::npos) << terminal.str();
  SimplifyFigures figures;  // the pipeline's simplify step result: its report section
  figures.outcome = *outcome;
  const std::string markdown = figures.markdown(Report{});
  EXPECT_NE(markdown.find("| remove-identity | 1 |"), std::string::npos) << markdown;
  EXPECT_NE(figures.html(Report{}).find("<tr><td>fuse-transposes</td><td>1</td></tr>"), std::string::npos);
}

}  // namespace
