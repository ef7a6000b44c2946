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
