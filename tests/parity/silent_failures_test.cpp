// Silent failures through the real proof: small models built here run on ONNX Runtime's CPU
// provider, whose outputs are all zeros, saturated or NaN while the reference (what PyTorch would
// give for the intended computation) is finite and non-zero; and a correct model whose true answer
// is all zeros, which must not be flagged.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "onnxproof/parity/parity.h"
#include "onnxproof/parity/silent_failures.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

// One node of a test graph: op(inputs...) -> output.
struct NodeSpec {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;
  std::string output;
};

// x (float32 2x4) -> nodes in order -> y, with scalar float32 initializers.
onnx::ModelProto graph_model(const std::vector<NodeSpec>& nodes,
                             const std::vector<std::pair<std::string, float>>& scalars) {
  auto model = single_node_model("Identity", {tensor_value("x", onnx::TensorProto::FLOAT, {2, 4})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {2, 4}));
  auto& graph = *model.mutable_graph();
  graph.clear_node();
  for (const auto& spec : nodes) {
    auto* node = graph.add_node();
    node->set_name(spec.name);
    node->set_op_type(spec.op_type);
    for (const auto& input : spec.inputs) node->add_input(input);
    node->add_output(spec.output);
  }
  for (const auto& [name, value] : scalars) {
    auto* tensor = graph.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_float_data(value);
  }
  return model;
}

Tensor float_tensor(std::initializer_list<float> values) {
  auto tensor = *Tensor::zeros(DType::float32, {2, 4});
  std::copy(values.begin(), values.end(), tensor.mutable_values<float>().begin());
  return tensor;
}

// One case: input x, and PyTorch's output y (the intended computation).
Reference one_case(Tensor x, Tensor y) {
  ReferenceCase c;
  c.data_set = "test_data_set_0";
  c.inputs.push_back({"x", std::move(x)});
  c.outputs.push_back({"y", std::move(y)});
  Reference reference;
  reference.cases.push_back(std::move(c));
  return reference;
}

ParityResult prove(const TempDir& dir, const onnx::ModelProto& model, const Reference& reference) {
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  ParityOptions options;
  options.intra_op_threads = 1;
  auto result = run_parity(dir / "m.onnx", reference, options);
  EXPECT_TRUE(result) << result.error().describe();
  return result ? *result : ParityResult{};
}

const Finding* find(const ParityResult& result, FindingCode code) {
  const auto it =
      std::find_if(result.findings.begin(), result.findings.end(), [&](const Finding& f) { return f.code == code; });
  return it == result.findings.end() ? nullptr : &*it;
}

const Tensor k_x = float_tensor({1, -2, 3, -4, 5, -6, 7, -8});

TEST(SilentFailures, AllZerosOutputIsFlaggedWithItsFirstNode) {
  TempDir dir;
  // y = (x + x) * 0: a "kernel" that returns zeros; PyTorch's answer is 2x.
  const auto model =
      graph_model({{"double", "Add", {"x", "x"}, "a"}, {"zeroing", "Mul", {"a", "zero"}, "y"}}, {{"zero", 0.0F}});
  const auto result = prove(dir, model, one_case(k_x, float_tensor({2, -4, 6, -8, 10, -12, 14, -16})));
  const Finding* zeros = find(result, FindingCode::output_all_zeros);
  ASSERT_NE(zeros, nullptr);
  EXPECT_EQ(zeros->severity, Severity::error);
  EXPECT_EQ(zeros->where, "y");
  EXPECT_NE(zeros->message.find("output 'y' on cpu (all optimizations) is all zeros where PyTorch's is not"),
            std::string::npos)
      << zeros->message;
  EXPECT_NE(zeros->message.find("first node whose output is all zeros: 'zeroing' (Mul), value 'y'"), std::string::npos)
      << zeros->message;
  EXPECT_FALSE(result.passed());
}

TEST(SilentFailures, SaturatedOutputIsFlaggedWithItsFirstNode) {
  TempDir dir;
  // y = clip(x * 1e5, +-65504): float16's range imposed on a float32 value; PyTorch's is x * 1e5.
  const auto model = graph_model({{"scale", "Mul", {"x", "big"}, "s"}, {"clamp", "Clip", {"s", "low", "high"}, "y"}},
                                 {{"big", 1e5F}, {"low", -65504.0F}, {"high", 65504.0F}});
  const auto result = prove(dir, model, one_case(k_x, float_tensor({1e5, -2e5, 3e5, -4e5, 5e5, -6e5, 7e5, -8e5})));
  const Finding* saturated = find(result, FindingCode::output_saturated);
  ASSERT_NE(saturated, nullptr) << (result.findings.empty() ? "no findings" : result.findings.front().message);
  EXPECT_EQ(saturated->where, "y");
  EXPECT_NE(saturated->message.find("has 8 elements at +-65504 (the largest finite float16)"), std::string::npos)
      << saturated->message;
  EXPECT_NE(saturated->message.find("'clamp' (Clip), value 'y'"), std::string::npos) << saturated->message;
}

TEST(SilentFailures, NanWherePyTorchIsFiniteNamesTheFirstNode) {
  TempDir dir;
  // y = sqrt(x - 10) gives NaN for every element; PyTorch's (intended) answer is finite.
  const auto model =
      graph_model({{"shift", "Sub", {"x", "ten"}, "d"}, {"root", "Sqrt", {"d"}, "r"}, {"copy", "Identity", {"r"}, "y"}},
                  {{"ten", 10.0F}});
  const auto result = prove(dir, model, one_case(k_x, float_tensor({3, 3.4F, 2.6F, 3.7F, 2.2F, 4, 1.7F, 4.2F})));
  const Finding* nan = find(result, FindingCode::nan_or_inf);
  ASSERT_NE(nan, nullptr);
  EXPECT_NE(nan->message.find("on cpu"), std::string::npos) << nan->message;
  EXPECT_NE(nan->message.find("first node whose output is NaN/Inf: 'root' (Sqrt), value 'r'"), std::string::npos)
      << nan->message;
  EXPECT_EQ(find(result, FindingCode::output_all_zeros), nullptr);
}

TEST(SilentFailures, TrueAllZeroAnswerIsNotFlagged) {
  TempDir dir;
  // y = relu(-|x|): every element is zero, for ONNX Runtime and for PyTorch alike.
  const auto model =
      graph_model({{"abs", "Abs", {"x"}, "a"}, {"negate", "Neg", {"a"}, "n"}, {"relu", "Relu", {"n"}, "y"}}, {});
  const auto result = prove(dir, model, one_case(k_x, *Tensor::zeros(DType::float32, {2, 4})));
  EXPECT_EQ(find(result, FindingCode::output_all_zeros), nullptr);
  EXPECT_EQ(find(result, FindingCode::output_saturated), nullptr);
  EXPECT_EQ(find(result, FindingCode::nan_or_inf), nullptr);
  EXPECT_EQ(find(result, FindingCode::parity_mismatch), nullptr);
}

TEST(SilentSigns, CountOnlyWherePyTorchDoesNotShowThem) {
  const Tensor inf_and_max = float_tensor({INFINITY, 65504, 65504, 0, 1, 1, 1, 1});
  const auto signs = detect_silent_signs(float_tensor({1, 65504, 2, 0, 1, 1, 1, 1}), inf_and_max);
  EXPECT_EQ(signs.non_finite, 1);
  EXPECT_EQ(signs.saturated, 1);  // PyTorch's second element is 65504 itself
  EXPECT_DOUBLE_EQ(signs.saturated_value, 65504.0);
  EXPECT_FALSE(signs.all_zeros);
  EXPECT_FALSE(
      detect_silent_signs(float_tensor({NAN, 1, 1, 1, 1, 1, 1, 1}), float_tensor({NAN, 1, 1, 1, 1, 1, 1, 1})).any());
  const auto zero = *Tensor::zeros(DType::float32, {2, 4});
  EXPECT_TRUE(detect_silent_signs(float_tensor({0, 0, 0, 0, 0, 0, 0, 1e-3F}), zero).all_zeros);
  EXPECT_FALSE(detect_silent_signs(zero, zero).all_zeros);
}

}  // namespace
