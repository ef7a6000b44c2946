#include <gtest/gtest.h>

#include "onnxproof/runtime/session.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

class MatmulSession : public ::testing::Test {
 protected:
  void SetUp() override {
    write_bytes(m_dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
    auto session = Session::open(m_dir / "m.onnx");
    ASSERT_TRUE(session) << session.error().describe();
    m_session.emplace(std::move(*session));
  }

  TempDir m_dir;
  std::optional<Session> m_session;
};

TEST_F(MatmulSession, DescribesInputsWithSymbolicDimensions) {
  ASSERT_EQ(m_session->inputs().size(), 1U);
  const auto& x = m_session->inputs()[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, DType::float32);
  EXPECT_EQ(describe_dims(x), "Nx4");
}

TEST_F(MatmulSession, RunsAndReturnsOutputs) {
  auto x = *Tensor::zeros(DType::float32, {3, 4});
  for (float& v : x.mutable_values<float>()) v = 1.0F;
  auto outputs = m_session->run({{"x", &x}});
  ASSERT_TRUE(outputs) << outputs.error().describe();
  ASSERT_EQ(outputs->size(), 1U);
  EXPECT_EQ((*outputs)[0].shape(), (std::vector<int64_t>{3, 2}));
  for (const float v : (*outputs)[0].values<float>()) EXPECT_FLOAT_EQ(v, 2.0F);  // 4 * 1 * 0.5
}

TEST_F(MatmulSession, WrongDtypeNamesTheInputAndWhatWasExpected) {
  auto x = *Tensor::zeros(DType::int64, {3, 4});
  auto outputs = m_session->run({{"x", &x}});
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().describe(), "input 'x': expected float32 Nx4, got int64 3x4 (wrong dtype)");
}

TEST_F(MatmulSession, WrongRankAndWrongFixedDimensionAreRefused) {
  auto rank3 = *Tensor::zeros(DType::float32, {1, 3, 4});
  EXPECT_NE(m_session->run({{"x", &rank3}}).error().describe().find("wrong rank"), std::string::npos);
  auto width5 = *Tensor::zeros(DType::float32, {3, 5});
  EXPECT_NE(m_session->run({{"x", &width5}}).error().describe().find("axis 1 is fixed at 4"), std::string::npos);
}

TEST_F(MatmulSession, UnknownAndMissingInputsAreRefused) {
  auto x = *Tensor::zeros(DType::float32, {3, 4});
  auto unknown = m_session->run({{"x", &x}, {"z", &x}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().describe(), "'z' is not an input of the model (inputs: x)");
  auto missing = m_session->run({});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().describe(), "input 'x' (float32 Nx4) is missing");
}

TEST(Session, UnavailableProviderIsAClearError) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", SessionOptions{.provider = "dnnl"});  // not in the CPU build
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::not_found);
  EXPECT_NE(session.error().describe().find("'dnnl' is not available"), std::string::npos)
      << session.error().describe();
}

// The reasons a GPU provider cannot run, as the message says them: the provider is not in the
// build, its library is not beside the build, a library it needs is missing, or no device.
bool says_precisely_why(const std::string& message) {
  for (const char* reason :
       {"is not available in this ONNX Runtime", "no provider library", "no device", "a library it needs is not"}) {
    if (message.find(reason) != std::string::npos) return true;
  }
  return false;
}

TEST(Session, CudaEitherRunsOrSaysWhyNot) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", SessionOptions{.provider = "cuda"});
  if (session) GTEST_SKIP() << "CUDA is usable on this machine";
  EXPECT_EQ(session.error().code(), ErrorCode::not_found);
  EXPECT_NE(session.error().describe().find("'cuda'"), std::string::npos) << session.error().describe();
  EXPECT_TRUE(says_precisely_why(session.error().describe())) << session.error().describe();
}

TEST(Session, TensorrtEitherRunsOrSaysWhyNot) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", SessionOptions{.provider = "tensorrt", .tensorrt_cache = dir / "trt"});
  if (session) GTEST_SKIP() << "TensorRT is usable on this machine";
  EXPECT_EQ(session.error().code(), ErrorCode::not_found);
  EXPECT_NE(session.error().describe().find("'tensorrt'"), std::string::npos) << session.error().describe();
  EXPECT_TRUE(says_precisely_why(session.error().describe())) << session.error().describe();
}

// PROVIDER_FALLBACK's source, on a real profile: the CPU provider's, where every node is on the CPU,
// so asking which nodes are not on CUDA names them all.
TEST(Session, ProfileNamesEveryNodeAndTheProviderThatRanIt) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", SessionOptions{.profile_prefix = dir / "profile"});
  ASSERT_TRUE(session) << session.error().describe();
  auto x = *Tensor::zeros(DType::float32, {3, 4});
  ASSERT_TRUE(session->run({{"x", &x}}));
  const auto profile = session->end_profiling();
  ASSERT_TRUE(profile) << profile.error().describe();
  ASSERT_TRUE(std::filesystem::is_regular_file(*profile)) << profile->string();
  EXPECT_EQ(profile->string().rfind((dir / "profile").string(), 0), 0U) << profile->string();
  const auto placements = read_profile_placements(*profile);
  ASSERT_TRUE(placements) << placements.error().describe();
  ASSERT_FALSE(placements->empty());
  for (const auto& placement : *placements) {
    EXPECT_EQ(placement.provider, "cpu") << placement.node;
    EXPECT_FALSE(placement.op_type.empty()) << placement.node;
  }
  EXPECT_TRUE(nodes_off_provider(*placements, "cpu").empty());
  EXPECT_EQ(nodes_off_provider(*placements, "cuda").size(), placements->size());
}

TEST(Session, ProfileParserReadsMixedPlacementsAndRefusesOtherText) {
  const std::string profile = R"([
    {"cat": "Session", "name": "model_run", "args": {}},
    {"cat": "Node", "name": "conv_fence_before", "args": {"op_name": "Conv"}},
    {"cat": "Node", "name": "conv_kernel_time", "args": {"op_name": "Conv", "provider": "CUDAExecutionProvider"}},
    {"cat": "Node", "name": "shape_kernel_time", "args": {"op_name": "Shape", "provider": "CPUExecutionProvider"}},
    {"cat": "Node", "name": "conv_kernel_time", "args": {"op_name": "Conv", "provider": "CUDAExecutionProvider"}}
  ])";
  const auto placements = parse_profile_placements(profile);
  ASSERT_TRUE(placements) << placements.error().describe();
  ASSERT_EQ(placements->size(), 2U);
  EXPECT_EQ((*placements)[0].node, "conv");
  EXPECT_EQ((*placements)[0].provider, "cuda");
  const auto off = nodes_off_provider(*placements, "cuda");
  ASSERT_EQ(off.size(), 1U);
  EXPECT_EQ(off[0].node, "shape");
  EXPECT_EQ(off[0].op_type, "Shape");
  EXPECT_EQ(off[0].provider, "cpu");
  EXPECT_EQ(parse_profile_placements("{not json").error().code(), ErrorCode::invalid_input);
  EXPECT_EQ(parse_profile_placements("{}").error().code(), ErrorCode::invalid_input);
}

TEST(Session, ModelOnnxRuntimeRefusesIsARuntimeError) {
  TempDir dir;
  auto model = matmul_model(4, 2);
  model.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  write_bytes(dir / "m.onnx", model.SerializeAsString());
  auto session = Session::open(dir / "m.onnx");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::runtime);
}

TEST(Session, ReportsTheLoadedOnnxRuntimeVersion) {
  EXPECT_EQ(onnxruntime_version().substr(0, 2), "1.");
  const auto providers = available_providers();
  EXPECT_NE(std::find(providers.begin(), providers.end(), "cpu"), providers.end());
}

}  // namespace
