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
  auto session = Session::open(dir / "m.onnx", SessionOptions{.provider = "openvino"});
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::not_found);
  EXPECT_NE(session.error().describe().find("'openvino' is not available"), std::string::npos)
      << session.error().describe();
}

TEST(Session, CudaEitherRunsOrSaysWhyNot) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", SessionOptions{.provider = "cuda"});
  if (session) GTEST_SKIP() << "CUDA is usable on this machine";
  EXPECT_EQ(session.error().code(), ErrorCode::not_found);
  EXPECT_NE(session.error().describe().find("'cuda'"), std::string::npos) << session.error().describe();
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
