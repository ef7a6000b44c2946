// Rules that look at shapes must not mistake a node that keeps the shape for one that keeps the
// values: each case here is a node whose output has its input's shape and different values (a
// reversal, a shift, a transpose of a square), which must stay, beside the true no-op of the same
// operator, which goes. Every simplified graph is proved against the original on random inputs.
#include <gtest/gtest.h>

#include <limits>

#include "graph_builder.h"
#include "onnxproof/simplify/simplify.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

constexpr int32_t k_int64 = onnx::TensorProto::INT64;

void add_int_attribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// y = Relu(Slice(x, starts, ends, axes, steps)) with x 4x3 and y 4x3: the Slice covers axis 0.
onnx::ModelProto whole_axis_slice_model(int64_t start, int64_t end, int64_t step) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {4, 3})}, tensor_value("y", k_float, {4, 3}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "s");
  add_initializer(model, "starts", k_int64, {1}, {}, {start});
  add_initializer(model, "ends", k_int64, {1}, {}, {end});
  add_initializer(model, "axes", k_int64, {1}, {}, {0});
  add_initializer(model, "steps", k_int64, {1}, {}, {step});
  add_node(model, "Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
  return model;
}

TEST(Soundness, AReversingSliceKeepsTheShapeAndStays) {
  // torch.flip(x, [0]) as both exporters write it: step -1 from the last row past the first.
  constexpr int64_t k_min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(count(simplify_and_prove(whole_axis_slice_model(-1, k_min, -1)), "Slice"), 1);
  EXPECT_EQ(count(simplify_and_prove(whole_axis_slice_model(3, -5, -1)), "Slice"), 1);
}

TEST(Soundness, AForwardSliceOverTheWholeAxisGoes) {
  constexpr int64_t k_max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(count(simplify_and_prove(whole_axis_slice_model(0, k_max, 1)), "Slice"), 0);
  EXPECT_EQ(count(simplify_and_prove(whole_axis_slice_model(-4, 4, 1)), "Slice"), 0);
}

TEST(Soundness, ASliceWithAStepComputedAtRunTimeStays) {
  // The steps are a graph input: their sign is unknown, so the node stays whatever its shape.
  auto model = whole_axis_slice_model(0, 4, 1);
  model.mutable_graph()->mutable_initializer()->RemoveLast();
  *model.mutable_graph()->add_input() = tensor_value("steps", k_int64, {1});
  onnx::ModelProto simplified = model;
  ASSERT_TRUE(simplify_model(simplified));
  EXPECT_EQ(count(simplified, "Slice"), 1);
}

// y = Pad(x, pads) with x 3x4 in `mode`: pads as given.
onnx::ModelProto pad_model(const std::string& mode, const std::vector<int64_t>& pads, std::vector<int64_t> out_dims) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {3, 4})}, tensor_value("y", k_float, out_dims));
  model.mutable_graph()->mutable_node(0)->set_input(0, "p");
  add_initializer(model, "pads", k_int64, {4}, {}, pads);
  auto* pad = add_node(model, "Pad", {"x", "pads"}, {"p"});
  auto* a = pad->add_attribute();
  a->set_name("mode");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(mode);
  return model;
}

TEST(Soundness, AReflectPadStaysAndAZeroPadGoesInEveryMode) {
  EXPECT_EQ(count(simplify_and_prove(pad_model("reflect", {1, 2, 1, 2}, {5, 8})), "Pad"), 1);
  EXPECT_EQ(count(simplify_and_prove(pad_model("edge", {0, 1, 0, 1}, {3, 6})), "Pad"), 1);
  for (const char* mode : {"constant", "reflect", "edge"})
    EXPECT_EQ(count(simplify_and_prove(pad_model(mode, {0, 0, 0, 0}, {3, 4})), "Pad"), 0) << mode;
}

TEST(Soundness, APadThatShiftsTheValuesKeepsTheShapeAndStays) {
  // One column added in front and one cropped at the end: the same 3x4 shape, every value moved.
  EXPECT_EQ(count(simplify_and_prove(pad_model("constant", {0, 1, 0, -1}, {3, 4})), "Pad"), 1);
  EXPECT_EQ(count(simplify_and_prove(pad_model("reflect", {0, 1, 0, -1}, {3, 4})), "Pad"), 1);
}

TEST(Soundness, ATransposeOfASquareWithoutPermStays) {
  // No perm: the dimensions reversed. A 3x3 keeps its shape and is transposed.
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {3, 3})}, tensor_value("y", k_float, {3, 3}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "t");
  add_node(model, "Transpose", {"x"}, {"t"});
  EXPECT_EQ(count(simplify_and_prove(model), "Transpose"), 1);
}

TEST(Soundness, ReshapeExpandAndConcatThatChangeNothingGo) {
  auto model = single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "c");
  add_initializer(model, "shape", k_int64, {2}, {}, {2, 3});
  add_node(model, "Reshape", {"x", "shape"}, {"r"});
  add_node(model, "Expand", {"r", "shape"}, {"e"});
  add_int_attribute(*add_node(model, "Concat", {"e"}, {"c"}), "axis", 0);
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(simplified.graph().node_size(), 1);
}

TEST(Soundness, AnIntegerMatMulPlusAConstantIsNoGemm) {
  // ONNX Runtime has no integer Gemm: the fusion would write a model it cannot load.
  constexpr int32_t k_int32 = onnx::TensorProto::INT32;
  auto model = single_node_model("Add", {tensor_value("a", k_int32, {2, 3})}, tensor_value("y", k_int32, {2, 2}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "m");
  model.mutable_graph()->mutable_node(0)->add_input("c");
  auto* w = model.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(k_int32);
  w->add_dims(3);
  w->add_dims(2);
  for (int i = 0; i < 6; ++i) w->add_int32_data(i);
  auto* c = model.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(k_int32);
  c->add_dims(2);
  c->add_int32_data(1);
  c->add_int32_data(2);
  add_node(model, "MatMul", {"a", "w"}, {"m"});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "Gemm"), 0);
  EXPECT_EQ(count(simplified, "MatMul"), 1);
}

TEST(Soundness, TwinNodesMergeOnlyWhenTheKeptOneNamesEveryOutputTheOtherUses) {
  // MaxPool(x) -> [y1] and MaxPool(x) -> [y2, indices]: the second's indices have no stand-in in
  // the first, so both stay (merging renamed the indices to "", an invalid graph).
  auto model =
      single_node_model("Relu", {tensor_value("x", k_float, {1, 1, 4, 4})}, tensor_value("y", k_float, {1, 1, 2, 2}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "y1");
  for (const auto& outputs : {std::vector<std::string>{"y1", ""}, std::vector<std::string>{"y2", "indices"}}) {
    auto* pool = add_node(model, "MaxPool", {"x"}, outputs);
    auto* kernel = pool->add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    kernel->add_ints(2);
    kernel->add_ints(2);
    auto* strides = pool->add_attribute();
    *strides = *kernel;
    strides->set_name("strides");
  }
  // Read inside the graph, not as its outputs (a node naming graph outputs is never merged).
  add_int_attribute(*add_node(model, "Cast", {"indices"}, {"index_values"}), "to", k_float);
  add_node(model, "Add", {"y2", "index_values"}, {"z"});
  *model.mutable_graph()->add_output() = tensor_value("z", k_float, {1, 1, 2, 2});
  const auto simplified = simplify_and_prove(model);
  EXPECT_EQ(count(simplified, "MaxPool"), 2);
}

}  // namespace
