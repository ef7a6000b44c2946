// The ONNX graph's float64 copy (localize/float64_graph.h): what is widened and what keeps float32.
#include "onnxproof/localize/float64_graph.h"

#include <gtest/gtest.h>

namespace onnxproof {
namespace {

constexpr int k_float = onnx::TensorProto::FLOAT;
constexpr int k_double = onnx::TensorProto::DOUBLE;

onnx::NodeProto node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name("/" + op);
  for (const auto& input : inputs) n.add_input(input);
  for (const auto& output : outputs) n.add_output(output);
  return n;
}

// x (float) -> Cast(to float) -> Add(+ value_float 0.5) -> Resize(scales: a float initializer) -> Erf -> y
onnx::ModelProto model() {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.add_opset_import()->set_version(20);
  auto& g = *m.mutable_graph();
  auto* x = g.add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(k_float);
  auto* y = g.add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(k_float);
  auto cast = node("Cast", {"x"}, {"c"});
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(k_float);
  auto half = node("Constant", {}, {"half"});
  auto* value = half.add_attribute();
  value->set_name("value_float");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_f(0.5F);
  for (const char* name : {"w", "scales"}) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(k_float);
    t->add_dims(1);
    t->add_float_data(2.0F);
  }
  *g.add_node() = cast;
  *g.add_node() = half;
  *g.add_node() = node("Add", {"c", "half"}, {"a"});
  *g.add_node() = node("Resize", {"a", "", "scales"}, {"r"});
  *g.add_node() = node("Erf", {"r"}, {"y"});
  return m;
}

TEST(Float64Graph, FloatTensorsValuesAndCastsBecomeDoubleButResizeScalesStayFloat) {
  const auto wide = float64_model(model());
  const auto& g = wide.graph();
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), k_double);
  EXPECT_EQ(g.output(0).type().tensor_type().elem_type(), k_double);
  EXPECT_EQ(g.initializer(0).data_type(), k_double);  // w
  EXPECT_EQ(g.initializer(1).data_type(), k_float);   // Resize's scales take float32 only
  EXPECT_EQ(g.node(0).attribute(0).i(), k_double);    // Cast(to=float) now casts to double
  ASSERT_EQ(g.node(1).attribute(0).name(), "value");  // Constant(value_float) now a double tensor
  EXPECT_EQ(g.node(1).attribute(0).t().data_type(), k_double);
}

TEST(Float64Graph, AnOperatorWithoutAFloat64KernelRunsInFloat32BetweenCasts) {
  const auto wide = float64_model(model(), {"Erf"});
  const auto& g = wide.graph();
  ASSERT_EQ(g.node_size(), 7);  // a cast down before Erf, a cast up after it
  EXPECT_EQ(g.node(4).op_type(), "Cast");
  EXPECT_EQ(g.node(4).attribute(0).i(), k_float);
  EXPECT_EQ(g.node(5).op_type(), "Erf");
  EXPECT_EQ(g.node(5).input(0), "r/float32");
  EXPECT_EQ(g.node(6).op_type(), "Cast");
  EXPECT_EQ(g.node(6).output(0), "y");
  EXPECT_EQ(g.node(6).attribute(0).i(), k_double);
}

}  // namespace
}  // namespace onnxproof
