// The parity findings' registry (src/parity/analyzers/): named analyzers in a declared order,
// each switchable and counted; and random outputs, found in the graph and checked by domain.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "onnxproof/parity/parity.h"
#include "onnxproof/parity/random_outputs.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

Tensor filled(std::vector<int64_t> shape, float start, float step) {
  auto tensor = *Tensor::zeros(DType::float32, std::move(shape));
  float value = start;
  for (float& v : tensor.mutable_values<float>()) v = value, value += step;
  return tensor;
}

Reference one_case(Tensor x, Tensor y) {
  ReferenceCase c;
  c.data_set = "test_data_set_0";
  c.inputs.push_back({"x", std::move(x)});
  c.outputs.push_back({"y", std::move(y)});
  Reference reference;
  reference.cases.push_back(std::move(c));
  return reference;
}

bool has(const ParityResult& result, FindingCode code) {
  return std::any_of(result.findings.begin(), result.findings.end(), [&](const Finding& f) { return f.code == code; });
}

// y = Relu(x) proved against a reference that is x + 1: a mismatch (and nothing else).
ParityResult prove_wrong_relu(const TempDir& dir, std::set<std::string> skipped) {
  const auto model = single_node_model("Relu", {tensor_value("x", onnx::TensorProto::FLOAT, {2, 4})},
                                       tensor_value("y", onnx::TensorProto::FLOAT, {2, 4}));
  write_bytes(dir / "relu.onnx", model.SerializeAsString());
  ParityOptions options;
  options.intra_op_threads = 1;
  options.skipped_analyzers = std::move(skipped);
  auto result =
      run_parity(dir / "relu.onnx", one_case(filled({2, 4}, -2.0F, 0.5F), filled({2, 4}, -1.0F, 0.5F)), options);
  EXPECT_TRUE(result) << result.error().describe();
  return result ? *result : ParityResult{};
}

}  // namespace

TEST(ParityAnalyzers, AreNamedOnceInTheirDeclaredOrder) {
  const auto names = parity_analyzer_names();
  ASSERT_GE(names.size(), 9U);
  EXPECT_EQ(names.front(), "mismatch");
  EXPECT_EQ(std::set<std::string_view>(names.begin(), names.end()).size(), names.size());
  for (const auto name : names) EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz-"), std::string::npos);
}

TEST(ParityAnalyzers, EachOneIsCountedAndCanBeSwitchedOff) {
  TempDir dir;
  const auto all = prove_wrong_relu(dir, {});
  EXPECT_TRUE(has(all, FindingCode::parity_mismatch));
  EXPECT_EQ(all.analyzer_findings.at("mismatch"), 1U);
  EXPECT_EQ(all.analyzer_findings.at("random-output"), 0U);
  EXPECT_EQ(all.analyzer_findings.size(), parity_analyzer_names().size());
  const auto without = prove_wrong_relu(dir, {"mismatch"});
  EXPECT_FALSE(has(without, FindingCode::parity_mismatch));
  EXPECT_FALSE(without.analyzer_findings.contains("mismatch"));
  EXPECT_FALSE(without.rows.empty());  // the rows are compared all the same
}

TEST(RandomOutputs, AreFoundThroughTheGraphAndCheckedByDomain) {
  TempDir dir;
  // y = RandomUniformLike(x) + x: random through a chain of nodes.
  auto model = single_node_model("RandomUniformLike", {tensor_value("x", onnx::TensorProto::FLOAT, {4, 8})},
                                 tensor_value("y", onnx::TensorProto::FLOAT, {4, 8}));
  auto& graph = *model.mutable_graph();
  graph.mutable_node(0)->set_name("draw");
  graph.mutable_node(0)->set_output(0, "u");
  auto* add = graph.add_node();
  add->set_op_type("Add");
  add->add_input("u");
  add->add_input("x");
  add->add_output("y");
  const auto found = random_graph_outputs(model);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found.at("y"), "RandomUniformLike node 'draw'");

  write_bytes(dir / "random.onnx", model.SerializeAsString());
  // PyTorch's draw: x + another uniform sample, all in [x, x + 1).
  Reference reference = one_case(filled({4, 8}, 0.0F, 0.01F), filled({4, 8}, 0.5F, 0.01F));
  mark_random_outputs(model, reference);
  ParityOptions options;
  options.compare_optimization_off = false;
  auto result = run_parity(dir / "random.onnx", reference, options);
  ASSERT_TRUE(result) << result.error().describe();
  ASSERT_EQ(result->rows.size(), 1U);
  EXPECT_EQ(rule_name(result->rows[0].rule), std::string("domain"));
  EXPECT_TRUE(result->passed()) << result->findings.front().message;
  EXPECT_TRUE(has(*result, FindingCode::random_output));
}

TEST(RandomOutputs, ADrawOutsidePyTorchsDomainFails) {
  const Tensor draws = filled({4, 8}, -0.5F, 0.03F);
  EXPECT_TRUE(compare_domain(draws, filled({4, 8}, 0.9F, -0.2F)).allclose);  // any finite float
  auto with_nan = filled({4, 8}, 0.0F, 0.1F);
  with_nan.mutable_values<float>()[3] = NAN;
  const auto outside = compare_domain(draws, with_nan);
  EXPECT_FALSE(outside.allclose);
  EXPECT_EQ(outside.mismatches, 1);
  // Indices: PyTorch's 16 samples are all >= 0, so a negative one is outside.
  auto indices = *Tensor::zeros(DType::int64, {16});
  auto negative = *Tensor::zeros(DType::int64, {16});
  negative.mutable_values<int64_t>()[5] = -1;
  EXPECT_TRUE(compare_domain(indices, indices).allclose);
  EXPECT_FALSE(compare_domain(indices, negative).allclose);
  EXPECT_FALSE(compare_domain(indices, draws).allclose);  // another dtype
}
