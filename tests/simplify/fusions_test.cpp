// The fusion rules and the arithmetic no-ops on graphs built in code: op counts before and after,
// outputs compared with ONNX Runtime, and the cases where a rule must not fire.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "onnxproof/model/model_io.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/simplify/simplify.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

TEST(Fusions, TwoTransposesBecomeOneAndAnIdentityPairGoes) {
  // x 2x3x4: perm [1,2,0] then [2,0,1] is the identity: both go; a third chain composes.
  auto model =
      single_node_model("Relu", {tensor_value("x", k_float, {2, 3, 4})}, tensor_value("y", k_float, {3, 2, 4}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "t4");
  add_ints(add_node(model, "Transpose", {"x"}, {"t1"}), "perm", {1, 2, 0});
  add_ints(add_node(model, "Transpose", {"t1"}, {"t2"}), "perm", {2, 0, 1});  // back to x's layout
  add_ints(add_node(model, "Transpose", {"t2"}, {"t3"}), "perm", {0, 2, 1});
  add_ints(add_node(model, "Transpose", {"t3"}, {"t4"}), "perm", {2, 0, 1});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Transpose"), 1);
}

TEST(Fusions, ReshapeAfterASqueezeAndAReshapeReadsTheSourceAndAWideningCastChainIsOne) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {2, 1, 6})}, tensor_value("y", k_float, {3, 4}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "r2");
  add_initializer(model, "axes", onnx::TensorProto::INT64, {1}, {}, {1});
  add_initializer(model, "s1", onnx::TensorProto::INT64, {2}, {}, {4, 3});
  add_initializer(model, "s2", onnx::TensorProto::INT64, {2}, {}, {3, 4});
  add_node(model, "Squeeze", {"x", "axes"}, {"sq"});
  add_node(model, "Reshape", {"sq", "s1"}, {"r1"});
  add_node(model, "Reshape", {"r1", "s2"}, {"r2"});
  // float32 -> float64 -> float16: the double holds every float exactly, so one Cast to float16 does.
  add_int(add_node(model, "Cast", {"r2"}, {"c1"}), "to", onnx::TensorProto::DOUBLE);
  add_int(add_node(model, "Cast", {"c1"}, {"c2"}), "to", onnx::TensorProto::FLOAT16);
  *model.mutable_graph()->add_output() = tensor_value("c2", onnx::TensorProto::FLOAT16, {3, 4});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Squeeze"), 0);
  EXPECT_EQ(count(simplified, "Reshape"), 1);
  EXPECT_EQ(count(simplified, "Cast"), 1);
}

TEST(Fusions, ATransposeOfSizeOneDimensionsBeforeAReshapeGoesButARealOneStays) {
  // x 2x1x1x5 -> Transpose [0, 3, 1, 2] (2x5x1x1, the same order of elements) -> Reshape [2, 5].
  auto model =
      single_node_model("Reshape", {tensor_value("x", k_float, {2, 1, 1, 5})}, tensor_value("y", k_float, {2, 5}));
  auto& graph = *model.mutable_graph();
  graph.mutable_node(0)->add_input("shape");
  graph.mutable_node(0)->set_input(0, "t");
  add_initializer(model, "shape", onnx::TensorProto::INT64, {2}, {}, {2, 5});
  add_ints(add_node(model, "Transpose", {"x"}, {"t"}), "perm", {0, 3, 1, 2});
  EXPECT_EQ(count(simplify_and_prove(model), "Transpose"), 0);
  // x 2x3x1x5 -> Transpose [0, 3, 1, 2] moves the 3 and the 5 past each other: it stays.
  graph.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(3);
  graph.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(15);
  for (auto& initializer : *graph.mutable_initializer()) {
    if (initializer.name() == "shape") initializer.set_int64_data(1, 15);
  }
  EXPECT_EQ(count(simplify_and_prove(model), "Transpose"), 1);
}

TEST(Fusions, TwoSlicesOnDifferentAxesBecomeOneButTwoOnTheSameAxisStay) {
  // x 4x6x8 -> Slice axis 1 [1:5] -> Slice axis -1 [0:8:2] -> 4x4x4: one Slice over axes 1 and 2.
  const auto build = [](int64_t second_axis) {
    auto model = single_node_model("Slice", {tensor_value("x", k_float, {4, 6, 8})}, tensor_value("y", k_float, {}));
    auto& graph = *model.mutable_graph();
    graph.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    auto& second = *graph.mutable_node(0);
    second.set_input(0, "s1");
    for (const char* name : {"starts2", "ends2", "axes2", "steps2"}) second.add_input(name);
    add_initializer(model, "starts1", onnx::TensorProto::INT64, {1}, {}, {1});
    add_initializer(model, "ends1", onnx::TensorProto::INT64, {1}, {}, {5});
    add_initializer(model, "axes1", onnx::TensorProto::INT64, {1}, {}, {1});
    add_initializer(model, "starts2", onnx::TensorProto::INT64, {1}, {}, {0});
    add_initializer(model, "ends2", onnx::TensorProto::INT64, {1}, {}, {8});
    add_initializer(model, "axes2", onnx::TensorProto::INT64, {1}, {}, {second_axis});
    add_initializer(model, "steps2", onnx::TensorProto::INT64, {1}, {}, {2});
    add_node(model, "Slice", {"x", "starts1", "ends1", "axes1"}, {"s1"});
    return model;
  };
  EXPECT_EQ(count(simplify_and_prove(build(-1)), "Slice"), 1);
  EXPECT_EQ(count(simplify_and_prove(build(1)), "Slice"), 2);
}

TEST(Fusions, ANarrowingCastInTheMiddleStays) {
  // float32 -> int32 -> float32 rounds: the pair must stay.
  auto model = single_node_model("Cast", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
  auto& second = *model.mutable_graph()->mutable_node(0);
  second.set_input(0, "i");
  add_int(&second, "to", onnx::TensorProto::FLOAT);
  add_int(add_node(model, "Cast", {"x"}, {"i"}), "to", onnx::TensorProto::INT32);
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Cast"), 2);
}

TEST(Fusions, BatchNormalizationFoldsIntoTheConvBeforeIt) {
  const auto model = conv_batch_norm_model(
      0.1F, {}, {{1.5F, 0.5F, -2.0F}, {0.1F, -0.2F, 0.3F}, {0.05F, 0.0F, -0.1F}, {0.9F, 1.2F, 0.3F}});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "BatchNormalization"), 0);
  EXPECT_EQ(count(simplified, "Conv"), 1);
}

TEST(Fusions, APerChannelMulAfterAConvFoldsIntoItsWeightsButALastAxisMulStays) {
  // ConvNeXt's layer scale: Conv -> Mul by a [1, 3, 1, 1] constant is one Conv.
  auto model = conv_model(0.1F, {0.5F, -0.5F, 0.25F});
  add_initializer(model, "gamma", k_float, {1, 3, 1, 1}, {0.5F, 2.0F, -1.5F});
  add_node(model, "Mul", {"c", "gamma"}, {"y"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Mul"), 0);
  EXPECT_EQ(count(simplified, "Conv"), 1);
  // A [6]-shaped constant scales the last axis (width), not the channels: it stays.
  auto last_axis = conv_model(0.1F, {});
  add_initializer(last_axis, "gamma", k_float, {6}, {0.5F, 1.5F, 2.5F, 3.5F, 4.5F, 5.5F});
  add_node(last_axis, "Mul", {"gamma", "c"}, {"y"});
  EXPECT_EQ(count(simplify_and_prove(last_axis), "Mul"), 1);
}

TEST(Fusions, ThreeMatMulsOfOneInputBecomeOneAndASplitButTwoStay) {
  // Attention's query, key and value: x (2x4) times three constant matrices of 3, 2 and 5 columns.
  const auto build = [](int projections) {
    auto model = single_node_model("MatMul", {tensor_value("x", k_float, {2, 4})}, tensor_value("q", k_float, {2, 3}));
    model.mutable_graph()->mutable_node(0)->add_input("wq");
    add_initializer(model, "wq", k_float, {4, 3}, std::vector<float>(12, 0.5F));
    std::vector<float> wk(8), wv(20);
    for (std::size_t i = 0; i < wk.size(); ++i) wk[i] = 0.1F * static_cast<float>(i) - 0.3F;
    for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = 0.05F * static_cast<float>(i % 9) - 0.2F;
    add_initializer(model, "wk", k_float, {4, 2}, wk);
    add_node(model, "MatMul", {"x", "wk"}, {"k"});
    *model.mutable_graph()->add_output() = tensor_value("k", k_float, {2, 2});
    if (projections == 3) {
      add_initializer(model, "wv", k_float, {4, 5}, wv);
      add_node(model, "MatMul", {"x", "wv"}, {"v"});
      *model.mutable_graph()->add_output() = tensor_value("v", k_float, {2, 5});
    }
    return model;
  };
  const auto merged = simplify_and_prove(build(3));
  EXPECT_EQ(count(merged, "MatMul"), 1);
  EXPECT_EQ(count(merged, "Split"), 1);
  EXPECT_EQ(count(simplify_and_prove(build(2)), "MatMul"), 2);
}

TEST(Fusions, MatMulPlusAConstantVectorIsAGemmAndSkipPassTurnsItOff) {
  auto model = single_node_model("MatMul", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 4}));
  auto& matmul = *model.mutable_graph()->mutable_node(0);
  matmul.add_input("w");
  matmul.set_output(0, "m");
  add_initializer(model, "w", k_float, {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  add_initializer(model, "b", k_float, {4}, {0.5F, -1, 2, 0});
  add_node(model, "Add", {"m", "b"}, {"y"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Gemm"), 1);
  EXPECT_EQ(count(simplified, "MatMul") + count(simplified, "Add"), 0);

  onnx::ModelProto kept = model;
  SimplifyOptions options;
  options.skip_passes = {"fusions"};
  ASSERT_TRUE(simplify_model(kept, options));
  EXPECT_EQ(count(kept, "Gemm"), 0);
  options.skip_passes = {"no-such-pass"};
  const auto refused = simplify_model(kept, options);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::usage);
}

TEST(NoOps, AddingZeroAndMultiplyingByOneGoWhenTheShapeStaysButABroadcastStays) {
  // x 2x3 + zeros[3] and * ones[1] keep x's shape: both go. zeros[2x3] + y (y 3) broadcasts y up: it stays.
  auto model = relu_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "m");
  add_initializer(model, "zeros", k_float, {3}, {0, 0, 0});
  add_initializer(model, "one", k_float, {1}, {1});
  add_node(model, "Add", {"x", "zeros"}, {"a"});
  add_node(model, "Mul", {"a", "one"}, {"m"});
  add_initializer(model, "half", k_float, {3}, {0.5F, 0.5F, 0.5F});
  add_node(model, "Add", {"x", "half"}, {"kept"});  // not an identity element: stays
  *model.mutable_graph()->add_output() = tensor_value("kept", k_float, {2, 3});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Mul"), 0);
  EXPECT_EQ(count(simplified, "Add"), 1);
}

TEST(CommonSubexpressions, TwinNodesAndTwinConstantsUnderOtherNamesMerge) {
  // Unsqueeze(x, axes_a) and Unsqueeze(x, axes_b) with equal axes are one value; Neg of each too.
  auto model = single_node_model("Add", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 1, 3}));
  auto& add = *model.mutable_graph()->mutable_node(0);
  add.set_input(0, "n1");
  add.add_input("n2");
  add_initializer(model, "axes_a", onnx::TensorProto::INT64, {1}, {}, {1});
  add_initializer(model, "axes_b", onnx::TensorProto::INT64, {1}, {}, {1});
  add_node(model, "Unsqueeze", {"x", "axes_a"}, {"u1"});
  add_node(model, "Unsqueeze", {"x", "axes_b"}, {"u2"});
  add_node(model, "Neg", {"u1"}, {"n1"});
  add_node(model, "Neg", {"u2"}, {"n2"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Unsqueeze"), 1);
  EXPECT_EQ(count(simplified, "Neg"), 1);
}

// Relu(Reshape(Add(Mul(t, 0.5), Tanh(t)), back)) with t = Reshape(x, [-1, 1, 6]), x Nx6.

TEST(Fusions, ReshapesAroundElementwiseNodesGoWhenTheSecondRestoresTheShape) {
  EXPECT_EQ(count(simplify_and_prove(reshapes_around_elementwise_model({-1, 6}, {-1, 6})), "Reshape"), 0);
  // Back to [-1, 3]: not x's shape, both stay.
  EXPECT_EQ(count(simplify_and_prove(reshapes_around_elementwise_model({-1, 3}, {-1, 3})), "Reshape"), 2);
}

TEST(Fusions, AReshapeWithALoneCopiedSizeAfterAReshapeOrAUnitTransposeReadsTheSource) {
  // Reshape(Reshape(x, [-1, 1, 1, 6]), [0, 6]): the 0 is the only size that fits, -1; and
  // Reshape(Transpose(x4, [0, 2, 1, 3]), [0, 6]) with x4 Nx1x1x6 where the Transpose keeps axis 0.
  auto model = single_node_model("Reshape", {tensor_value("x", k_float, {-1, 6})}, tensor_value("y", k_float, {-1, 6}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "r");
  model.mutable_graph()->mutable_node(0)->add_input("copy");
  add_initializer(model, "unit", onnx::TensorProto::INT64, {4}, {}, {-1, 1, 1, 6});
  add_initializer(model, "copy", onnx::TensorProto::INT64, {2}, {}, {0, 6});
  add_node(model, "Reshape", {"x", "unit"}, {"r"});
  auto transposed = model;
  EXPECT_EQ(count(simplify_and_prove(model), "Reshape"), 1);
  auto* graph = transposed.mutable_graph();
  graph->mutable_node(1)->set_op_type("Transpose");
  graph->mutable_node(1)->mutable_input()->DeleteSubrange(1, 1);
  add_ints(graph->mutable_node(1), "perm", {0, 2, 1, 3});
  graph->mutable_node(1)->set_input(0, "x4");
  *graph->mutable_input(0) = tensor_value("x4", k_float, {-1, 1, 1, 6});
  const auto simplified = simplify_and_prove(transposed);
  EXPECT_EQ(count(simplified, "Transpose"), 0);
  EXPECT_EQ(count(simplified, "Reshape"), 1);
}

TEST(Fusions, TwoUnsqueezesBecomeOneWithTheAxesCarriedThrough) {
  // x 2x3 -> Unsqueeze [0] -> 1x2x3 -> Unsqueeze [3] -> 1x2x3x1: one Unsqueeze [0, 3].
  auto model =
      single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {1, 2, 3, 1}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "u2");
  add_initializer(model, "a1", onnx::TensorProto::INT64, {1}, {}, {0});
  add_initializer(model, "a2", onnx::TensorProto::INT64, {1}, {}, {-1});
  add_node(model, "Unsqueeze", {"x", "a1"}, {"u1"});
  add_node(model, "Unsqueeze", {"u1", "a2"}, {"u2"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Unsqueeze"), 1);
}

TEST(Fusions, AnUnsqueezeReadByTwoUnsqueezesGoesWhenBothReadItsSource) {
  // x 2x3 -> Unsqueeze [0] -> u1 1x2x3, read by Unsqueeze [3] (-> 1x2x3x1) and Unsqueeze [1] (-> 1x1x2x3):
  // both read x with composed axes, and u1 dies: 3 Unsqueezes become 2.
  auto model =
      single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {1, 2, 3, 1}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "u2");
  *model.mutable_graph()->add_output() = tensor_value("z", k_float, {1, 1, 2, 3});
  add_initializer(model, "a1", onnx::TensorProto::INT64, {1}, {}, {0});
  add_initializer(model, "a2", onnx::TensorProto::INT64, {1}, {}, {3});
  add_initializer(model, "a3", onnx::TensorProto::INT64, {1}, {}, {1});
  add_node(model, "Unsqueeze", {"x", "a1"}, {"u1"});
  add_node(model, "Unsqueeze", {"u1", "a2"}, {"u2"});
  add_node(model, "Unsqueeze", {"u1", "a3"}, {"z"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Unsqueeze"), 2);
  for (const auto& node : simplified.graph().node()) {
    if (node.op_type() == "Unsqueeze") {
      EXPECT_EQ(node.input(0), "x");
    }
  }
}
