// PROVIDER_FALLBACK from ONNX Runtime's profile: the real CPU provider's profile of a small model,
// read as if CUDA had been asked for (every node then "fell back"), and as the CPU (none did).

#include <gtest/gtest.h>

#include "onnxproof/parity/parity.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

TEST(ProviderFallback, NamesTheNodesAProfilePlacedOnAnotherProvider) {
  TempDir dir;
  auto model = matmul_model(4, 2);
  model.mutable_graph()->mutable_node(0)->set_name("project");
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  ReferenceCase c;
  c.data_set = "test_data_set_0";
  c.inputs.push_back({"x", *Tensor::zeros(DType::float32, {3, 4})});
  const auto placements = measure_placements(dir / "m.onnx", c, SessionOptions{.intra_op_threads = 1});
  ASSERT_TRUE(placements) << placements.error().describe();
  ASSERT_FALSE(placements->empty());

  const auto finding = fallback_finding("cuda", *placements);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->code, FindingCode::provider_fallback);
  EXPECT_EQ(finding->where, "cuda");
  EXPECT_NE(finding->message.find("did not run on cuda"), std::string::npos) << finding->message;
  EXPECT_NE(finding->message.find(" on cpu"), std::string::npos) << finding->message;
  for (const auto& placement : *placements) {
    EXPECT_NE(finding->message.find("'" + placement.node + "' (" + placement.op_type + ") on cpu"), std::string::npos)
        << finding->message;
  }
  EXPECT_FALSE(fallback_finding("cpu", *placements).has_value());
}

}  // namespace
