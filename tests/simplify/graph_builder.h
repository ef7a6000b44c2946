#pragma once
// Building small graphs in code for the simplify tests, and the check every such test ends with:
// simplify a copy, prove it against the original with ONNX Runtime on generated inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnxproof/simplify/simplify.h"
#include "test_support.h"

namespace onnxproof::testing {

constexpr int32_t k_float = onnx::TensorProto::FLOAT;

inline int count(const onnx::ModelProto& model, const std::string& op) {
  int n = 0;
  for (const auto& node : model.graph().node()) n += node.op_type() == op;
  return n;
}

inline onnx::NodeProto* add_node(onnx::ModelProto& model, const std::string& op, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs) {
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type(op);
  node->set_name(op + "_" + std::to_string(model.graph().node_size()));
  for (auto& in : inputs) node->add_input(in);
  for (auto& out : outputs) node->add_output(out);
  return node;
}

inline void add_initializer(onnx::ModelProto& model, const std::string& name, int32_t type, std::vector<int64_t> dims,
                            const std::vector<float>& floats, const std::vector<int64_t>& ints = {}) {
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (auto d : dims) t->add_dims(d);
  for (auto f : floats) t->add_float_data(f);
  for (auto i : ints) t->add_int64_data(i);
}

// y = Relu(x) with x 2x3 float.
inline onnx::ModelProto relu_model() {
  return single_node_model("Relu", {tensor_value("x", k_float, {2, 3})}, tensor_value("y", k_float, {2, 3}));
}

inline void add_ints(onnx::NodeProto* node, const std::string& name, std::vector<int64_t> values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (const int64_t v : values) a->add_ints(v);
}

inline void add_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// x (1x2x6x6) -> Conv (3 channels, 3x3, weights `step` apart; with bias `bias` when given) -> c;
// the graph's output y (1x3x6x6) is for the caller's node to write.
inline onnx::ModelProto conv_model(float step, const std::vector<float>& bias) {
  auto model =
      single_node_model("Conv", {tensor_value("x", k_float, {1, 2, 6, 6})}, tensor_value("y", k_float, {1, 3, 6, 6}));
  auto& conv = *model.mutable_graph()->mutable_node(0);
  conv.add_input("w");
  if (!bias.empty()) conv.add_input("b");
  conv.set_output(0, "c");
  add_ints(&conv, "pads", {1, 1, 1, 1});
  std::vector<float> weights(3 * 2 * 3 * 3);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = step * static_cast<float>(i % 7) - 3 * step;
  add_initializer(model, "w", k_float, {3, 2, 3, 3}, weights);
  if (!bias.empty()) add_initializer(model, "b", k_float, {3}, bias);
  return model;
}

// conv_model -> BatchNormalization(scale, shift, mean, var) -> y.
struct BatchNorm {
  std::vector<float> scale, shift, mean, var;
};
inline onnx::ModelProto conv_batch_norm_model(float step, const std::vector<float>& bias, const BatchNorm& norm) {
  auto model = conv_model(step, bias);
  add_initializer(model, "scale", k_float, {3}, norm.scale);
  add_initializer(model, "shift", k_float, {3}, norm.shift);
  add_initializer(model, "mean", k_float, {3}, norm.mean);
  add_initializer(model, "var", k_float, {3}, norm.var);
  add_node(model, "BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"});
  return model;
}

inline onnx::ModelProto reshapes_around_elementwise_model(std::vector<int64_t> back, std::vector<int64_t> out_dims) {
  auto model =
      single_node_model("Relu", {tensor_value("x", k_float, {-1, 6})}, tensor_value("y", k_float, std::move(out_dims)));
  model.mutable_graph()->mutable_node(0)->set_input(0, "z");
  add_initializer(model, "split", onnx::TensorProto::INT64, {3}, {}, {-1, 1, 6});
  add_initializer(model, "back", onnx::TensorProto::INT64, {static_cast<int64_t>(back.size())}, {}, back);
  add_initializer(model, "half", k_float, {}, {0.5F});
  add_node(model, "Reshape", {"x", "split"}, {"t"});
  add_node(model, "Mul", {"t", "half"}, {"m"});
  add_node(model, "Tanh", {"t"}, {"h"});
  add_node(model, "Add", {"m", "h"}, {"a"});
  add_node(model, "Reshape", {"a", "back"}, {"z"});
  return model;
}

inline onnx::ModelProto expand_guard_model(int64_t compared, int64_t last) {
  auto model =
      single_node_model("Expand", {tensor_value("x", k_float, {-1, 1, 3})}, tensor_value("y", k_float, {-1, 2, 3}));
  model.mutable_graph()->mutable_node(0)->add_input("sizes");
  add_initializer(model, "zero", onnx::TensorProto::INT64, {}, {}, {0});
  add_initializer(model, "axes", onnx::TensorProto::INT64, {1}, {}, {0});
  add_initializer(model, "two", onnx::TensorProto::INT64, {1}, {}, {2});
  add_initializer(model, "keep", onnx::TensorProto::INT64, {1}, {}, {last});
  add_initializer(model, "compared", onnx::TensorProto::INT64, {3}, {}, {compared, compared, compared});
  add_initializer(model, "ones", onnx::TensorProto::INT64, {3}, {}, {1, 1, 1});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Gather", {"s", "zero"}, {"n"});
  add_node(model, "Unsqueeze", {"n", "axes"}, {"n1"});
  add_int(add_node(model, "Concat", {"n1", "two", "keep"}, {"built"}), "axis", 0);
  add_node(model, "Equal", {"built", "compared"}, {"is_keep"});
  add_node(model, "Where", {"is_keep", "ones", "built"}, {"sizes"});
  return model;
}

// Simplifies a copy and proves it with generated inputs through ONNX Runtime.
inline onnx::ModelProto simplify_and_prove(const onnx::ModelProto& model, SimplifyOptions options = {}) {
  TempDir dir;
  write_bytes(dir / "before.onnx", model.SerializeAsString());
  onnx::ModelProto simplified = model;
  auto result = simplify_model(simplified, options);
  EXPECT_TRUE(result) << result.error().describe();
  write_bytes(dir / "after.onnx", simplified.SerializeAsString());
  auto proof = prove_simplification(dir / "before.onnx", dir / "after.onnx", nullptr, {});
  EXPECT_TRUE(proof) << proof.error().describe();
  if (proof) {
    EXPECT_GT(proof->cases, 0);
    EXPECT_TRUE(proof->findings.empty()) << proof->findings[0].message;
  }
  return simplified;
}

}  // namespace onnxproof::testing
