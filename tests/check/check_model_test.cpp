#include <gtest/gtest.h>

#include <algorithm>

#include "onnxproof/check/check_model.h"
#include "onnxproof/check/frozen_shapes.h"
#include "onnxproof/ops/opset_limits.h"
#include "onnxproof/ops/support_table.h"
#include "onnxproof/runtime/session.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

constexpr int32_t k_float = onnx::TensorProto::FLOAT;

CheckResult check(const onnx::ModelProto& model) {
  TempDir dir;
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  auto loaded = load_model(dir / "m.onnx");
  EXPECT_TRUE(loaded) << loaded.error().describe();
  auto result = check_model(*loaded);
  EXPECT_TRUE(result) << result.error().describe();
  return result.value_or(CheckResult{});
}

std::vector<std::string> codes(const CheckResult& result) {
  std::vector<std::string> out;
  for (const auto& finding : result.findings) out.emplace_back(finding.code_name());
  return out;
}

onnx::ModelProto add_model(int64_t opset = 17) {
  return single_node_model("Add", {tensor_value("a", k_float, {-1, 4}), tensor_value("b", k_float, {-1, 4})},
                           tensor_value("c", k_float, {-1, 4}), opset);
}

TEST(CheckModel, CleanModelPassesWithASummary) {
  const auto result = check(matmul_model(4, 2));
  EXPECT_TRUE(result.checker_passed);
  EXPECT_TRUE(result.shape_inference_passed);
  EXPECT_TRUE(result.findings.empty());
  const auto& summary = result.summary;
  EXPECT_EQ(summary.ir_version, 8);
  ASSERT_EQ(summary.inputs.size(), 1U);  // the initializer W is not an input
  EXPECT_EQ(summary.inputs[0].type, "float32");
  EXPECT_EQ(summary.inputs[0].dims[0].symbol, "N");
  EXPECT_EQ(summary.inputs[0].dims[1].size, 4);
  ASSERT_EQ(summary.operators.size(), 1U);
  EXPECT_EQ(summary.operators[0].domain, "ai.onnx");
  EXPECT_EQ(summary.operators[0].op_type, "MatMul");
  EXPECT_EQ(summary.operators[0].opset, 17);
  EXPECT_EQ(summary.initializer_bytes, 32U);
}

TEST(CheckModel, UnknownOperatorFailsTheChecker) {
  auto model = add_model();
  model.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  const auto result = check(model);
  EXPECT_FALSE(result.checker_passed);
  EXPECT_EQ(codes(result)[0], "CHECKER_FAILED");
  EXPECT_NE(result.findings[0].message.find("NoSuchOp"), std::string::npos) << result.findings[0].message;
}

TEST(CheckModel, IncompatibleShapesFailStrictShapeInference) {
  auto model = single_node_model("Add", {tensor_value("a", k_float, {3, 4}), tensor_value("b", k_float, {5, 6})},
                                 tensor_value("c", k_float, {3, 4}));
  const auto result = check(model);
  EXPECT_TRUE(result.checker_passed);
  EXPECT_FALSE(result.shape_inference_passed);
  EXPECT_EQ(codes(result), std::vector<std::string>{"SHAPE_INFERENCE_FAILED"});
}

TEST(CheckModel, AtenFallbackIsAnErrorNamingTheAtenOperator) {
  auto model = single_node_model("ATen", {tensor_value("a", k_float, {8})}, tensor_value("c", k_float, {8}), 17,
                                 "org.pytorch.aten");
  auto* attribute = model.mutable_graph()->mutable_node(0)->add_attribute();
  attribute->set_name("operator");
  attribute->set_type(onnx::AttributeProto::STRING);
  attribute->set_s("fft_rfft");
  const auto result = check(model);
  const auto it = std::find_if(result.findings.begin(), result.findings.end(),
                               [](const Finding& f) { return f.code == FindingCode::custom_domain_op; });
  ASSERT_NE(it, result.findings.end());
  EXPECT_EQ(it->severity, Severity::error);
  EXPECT_NE(it->message.find("aten::fft_rfft"), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("ATen fallback"), std::string::npos);
}

TEST(CheckModel, OtherCustomDomainsAreWarnings) {
  auto model = single_node_model("Gelu", {tensor_value("a", k_float, {8})}, tensor_value("c", k_float, {8}), 17,
                                 "com.microsoft");
  const auto result = check(model);
  const auto it = std::find_if(result.findings.begin(), result.findings.end(),
                               [](const Finding& f) { return f.code == FindingCode::custom_domain_op; });
  ASSERT_NE(it, result.findings.end());
  EXPECT_EQ(it->severity, Severity::warning);
  EXPECT_NE(it->message.find("com.microsoft"), std::string::npos);
}

TEST(CheckModel, OldOpsetIsAWarning) {
  const auto result = check(add_model(13));
  EXPECT_EQ(codes(result), std::vector<std::string>{"OPSET_TOO_OLD"});
  EXPECT_EQ(result.findings[0].severity, Severity::warning);
}

TEST(CheckModel, OpsetNewerThanTheOnnxLibraryIsAClearError) {
  TempDir dir;
  write_bytes(dir / "m.onnx", add_model(99).SerializeAsString());
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded);
  auto result = check_model(*loaded);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::unsupported);
  const std::string message = result.error().describe();
  EXPECT_NE(message.find("opset 99 of ai.onnx, newer than onnxproof can check and run"), std::string::npos) << message;
  // Both limits are named: ONNX Runtime's newest opset and the ONNX library's last release.
  EXPECT_NE(message.find("ONNX Runtime " + onnxruntime_version() + " runs up to " +
                         std::to_string(onnxruntime_newest_opset())),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("knows up to " + std::to_string(onnx_last_released_opset())), std::string::npos) << message;
}

// The ONNX checker accepts a graph with no outputs and negative declared dimensions; no runtime
// can use either, so check reports them.
TEST(CheckModel, NoOutputsAndNegativeDimensionsAreErrors) {
  onnx::ModelProto model =
      single_node_model("Relu", {tensor_value("x", k_float, {2, 4})}, tensor_value("y", k_float, {2, 4}));
  model.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-3);
  const auto error_mentions = [](const CheckResult& result, const std::string& text) {
    return std::any_of(result.findings.begin(), result.findings.end(), [&](const Finding& f) {
      return f.severity == Severity::error && f.message.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(error_mentions(check(model), "'x' declares dimension -3 on axis 0"));
  model.mutable_graph()->clear_output();
  EXPECT_TRUE(error_mentions(check(model), "the graph has no outputs"));
}

TEST(CheckModel, OpsetLimitsAreTheOnesOfTheInstalledLibraries) {
  // ONNX 1.23 released opset 27; ONNX Runtime 1.30 runs up to 26: the pinned versions' facts.
  EXPECT_GE(onnx_last_released_opset(), 23);
  EXPECT_GE(onnxruntime_newest_opset(), 21);
  EXPECT_EQ(newest_supported_opset().opset, std::min(onnx_last_released_opset(), onnxruntime_newest_opset()));
}

// The ort-cpu table (probed from ONNX Runtime 1.30) has no RoiAlign-22 kernel: the default opset
// of a model holding RoiAlign stops at 21, the newest with a supported RoiAlign; operators the
// table supports at the ceiling set no limit.
TEST(OpsetLimits, AnOperatorTheTableSupportsOnlyAtAnOlderOpsetLimitsTheDefault) {
  auto table = load_target_table("ort-cpu");
  ASSERT_TRUE(table) << table.error().describe();
  const OpsetLimit limit = newest_supported_opset({*table});
  ASSERT_GE(limit.opset, 22);
  ASSERT_TRUE(limit.op_limits.contains("RoiAlign"));
  EXPECT_EQ(limit.op_limits.at("RoiAlign"), 21);
  EXPECT_FALSE(limit.op_limits.contains("Conv"));
  EXPECT_FALSE(limit.op_limits.contains("Add"));
  for (const auto& [op_type, opset] : limit.op_limits) EXPECT_LT(opset, limit.opset) << op_type;
}

TEST(CheckModel, Opset21ModelWithGroupNormalizationAndInt4CastPasses) {
  // GroupNormalization-21 and Cast to int4 (new in opset 21) through the checker and strict
  // shape inference.
  onnx::ModelProto model = single_node_model(
      "GroupNormalization",
      {tensor_value("x", onnx::TensorProto::FLOAT, {2, 4, 3}), tensor_value("scale", onnx::TensorProto::FLOAT, {4}),
       tensor_value("bias", onnx::TensorProto::FLOAT, {4})},
      tensor_value("y", onnx::TensorProto::FLOAT, {2, 4, 3}), 21);
  auto* node = model.mutable_graph()->mutable_node(0);
  auto* groups = node->add_attribute();
  groups->set_name("num_groups");
  groups->set_type(onnx::AttributeProto::INT);
  groups->set_i(2);
  auto* to_int4 = model.mutable_graph()->add_node();
  to_int4->set_op_type("Cast");
  to_int4->add_input("y");
  to_int4->add_output("q");
  auto* to = to_int4->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT4);
  *model.mutable_graph()->mutable_output(0) = tensor_value("q", onnx::TensorProto::INT4, {2, 4, 3});
  model.set_ir_version(10);  // int4 came with IR version 10
  const CheckResult result = check(model);
  EXPECT_TRUE(result.checker_passed);
  EXPECT_TRUE(result.shape_inference_passed);
  EXPECT_EQ(result.summary.opset_imports.at(0), (std::pair<std::string, int64_t>{"ai.onnx", 21}));
}

TEST(CheckModel, IrVersionNewerThanTheOnnxLibraryIsAClearError) {
  TempDir dir;
  auto model = add_model();
  model.set_ir_version(42);
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded);
  auto result = check_model(*loaded);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().describe().find("IR version 42"), std::string::npos);
}

// An IR version the ONNX library knows but ONNX Runtime cannot read: refused, both limits named.
TEST(CheckModel, IrVersionNewerThanOnnxRuntimeReadsIsAClearError) {
  TempDir dir;
  auto model = add_model();
  model.set_ir_version(onnxruntime_newest_ir_version() + 1);
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  auto loaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded);
  auto result = check_model(*loaded);
  ASSERT_FALSE(result);
  const std::string message = result.error().describe();
  EXPECT_NE(message.find("ONNX Runtime " + onnxruntime_version() + " reads up to " +
                         std::to_string(onnxruntime_newest_ir_version())),
            std::string::npos)
      << message;
  EXPECT_GE(onnxruntime_newest_ir_version(), 10);
}

TEST(CheckModel, OperatorsInsideSubgraphsAreCounted) {
  const auto model = if_model_with_constant_branches(false);
  const auto result = check(model);
  EXPECT_TRUE(result.checker_passed);
  EXPECT_EQ(result.summary.node_count, 3);
  const auto constant = std::find_if(result.summary.operators.begin(), result.summary.operators.end(),
                                     [](const OperatorUse& op) { return op.op_type == "Constant"; });
  ASSERT_NE(constant, result.summary.operators.end());
  EXPECT_EQ(constant->count, 2);
  EXPECT_EQ(constant->in_subgraphs, 2);
}

// The frozen-shape analysis walks subgraphs with their scopes: a Reshape inside an If branch
// whose shape is a constant of the main graph holding the traced batch size is found.
TEST(FrozenShapes, AConstantShapeInsideASubgraphFromTheOuterScopeIsFound) {
  auto model = if_model_with_constant_branches(false);
  auto* graph = model.mutable_graph();
  auto* shape = graph->add_initializer();
  shape->set_name("frozen_shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(2);
  shape->add_int64_data(-1);
  auto* branch = graph->mutable_node(0)->mutable_attribute(0)->mutable_g();
  auto* reshape = branch->add_node();
  reshape->set_op_type("Reshape");
  reshape->set_name("reshape_in_branch");
  reshape->add_input("x");
  reshape->add_input("frozen_shape");
  reshape->add_output("reshaped");
  FrozenShapeOptions options;
  options.dynamic.push_back({"x", 0, "batch", 2});
  const auto findings = find_frozen_dimensions(model, options);
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].code, FindingCode::frozen_dimension);
  EXPECT_EQ(findings[0].where, "reshape_in_branch");
  EXPECT_EQ(findings[0].evidence.axis, "batch");
}

// A graph of `nodes` (op type, inputs, output) on x (batch x 3 x 8, batch symbolic), with
// int64 initializers, for the frozen-shape analysis; the last node's output is the graph's.
struct NodeSpec {
  std::string op_type;
  std::vector<std::string> inputs;
  std::string output;
  std::vector<int64_t> perm{};
};

onnx::ModelProto shape_graph(const std::vector<NodeSpec>& nodes,
                             const std::vector<std::pair<std::string, std::vector<int64_t>>>& constants) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("shapes");
  *graph->add_input() = tensor_value("x", k_float, {-1, 3, 8});
  for (const auto& [name, values] : constants) {
    auto* tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT64);
    tensor->add_dims(static_cast<int64_t>(values.size()));
    for (const auto value : values) tensor->add_int64_data(value);
  }
  for (const auto& spec : nodes) {
    auto* node = graph->add_node();
    node->set_op_type(spec.op_type);
    node->set_name(spec.output + "_node");
    for (const auto& input : spec.inputs) node->add_input(input);
    node->add_output(spec.output);
    if (!spec.perm.empty()) {
      auto* perm = node->add_attribute();
      perm->set_name("perm");
      perm->set_type(onnx::AttributeProto::INTS);
      for (const auto axis : spec.perm) perm->add_ints(axis);
    }
    *graph->add_output() = tensor_value(spec.output, k_float, {});
    graph->mutable_output()->rbegin()->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return model;
}

std::vector<std::string> frozen_nodes(const onnx::ModelProto& model, int64_t batch) {
  FrozenShapeOptions options;
  options.dynamic.push_back({"x", 0, "batch", batch});
  std::vector<std::string> nodes;
  for (const auto& finding : find_frozen_dimensions(model, options)) nodes.push_back(finding.where);
  return nodes;
}

// ViT's q/k/v split: Slices on the fixed axis of size 3 (after a Transpose) and a Reshape whose
// 3 lies on a fixed axis hold the example's batch of 3 by coincidence: no evidence.
TEST(FrozenShapes, AConstantOnAFixedAxisIsNoEvidenceEvenWhenItEqualsTheBatch) {
  const auto model =
      shape_graph({{"Transpose", {"x"}, "t", {1, 0, 2}},
                   {"Slice", {"t", "one", "two", "axis0"}, "k"},
                   {"Slice", {"t", "two", "three", "axis0"}, "v"},
                   {"Slice", {"x", "two", "three", "axis1"}, "last_channel"},
                   {"Reshape", {"x", "flat3"}, "r"}},
                  {{"one", {1}}, {"two", {2}}, {"three", {3}}, {"axis0", {0}}, {"axis1", {1}}, {"flat3", {-1, 3, 8}}});
  EXPECT_EQ(frozen_nodes(model, 3), std::vector<std::string>{});
  EXPECT_EQ(frozen_nodes(model, 2), std::vector<std::string>{});
}

// Must fire: the same constants where they meet the dynamic batch axis.
TEST(FrozenShapes, AConstantOnTheDynamicAxisIsStillFound) {
  auto model = shape_graph({{"Slice", {"x", "zero", "three", "axis0"}, "first_three"},
                            {"Reshape", {"x", "batch_first"}, "r"},
                            {"Transpose", {"x"}, "t", {1, 0, 2}},
                            {"Slice", {"t", "zero", "three", "axis1"}, "on_moved_batch"},
                            {"Expand", {"row", "expanded_shape"}, "expanded"}},
                           {{"zero", {0}},
                            {"three", {3}},
                            {"axis0", {0}},
                            {"axis1", {1}},
                            {"batch_first", {3, -1}},
                            {"expanded_shape", {3, 8}}});
  // A fixed row broadcast to the batch by a Python int: the constant makes the axis; kept.
  *model.mutable_graph()->add_input() = tensor_value("row", k_float, {1, 8});
  EXPECT_EQ(frozen_nodes(model, 3),
            (std::vector<std::string>{"first_three_node", "r_node", "on_moved_batch_node", "expanded_node"}));
}

// Without a -1 or 0 a Reshape fixes every size of a tensor with a dynamic axis.
TEST(FrozenShapes, AReshapeToConstantSizesOfADynamicTensorIsFound) {
  const auto model = shape_graph({{"Reshape", {"x", "fixed"}, "r"}}, {{"fixed", {2, 24}}});
  EXPECT_EQ(frozen_nodes(model, 2), std::vector<std::string>{"r_node"});
}

}  // namespace
