// Sessions on OpenVINO's CPU plugin (--provider openvino): the library setup fetches into
// .deps/openvino, opened at run time.
#include <gtest/gtest.h>

#include "onnxproof/runtime/session.h"
#include "test_support.h"

using namespace onnxproof;
using namespace onnxproof::testing;

namespace {

Tensor filled(DType dtype, std::vector<int64_t> shape, float value) {
  auto tensor = *Tensor::zeros(dtype, std::move(shape));
  for (float& v : tensor.mutable_values<float>()) v = value;
  return tensor;
}

// y = a + b over `elem_type` tensors of `dims` (-1: symbolic), on OpenVINO in float32.
Expected<Session> add_session(const TempDir& dir, int32_t elem_type, const std::vector<int64_t>& dims) {
  const auto model = single_node_model("Add", {tensor_value("a", elem_type, dims), tensor_value("b", elem_type, dims)},
                                       tensor_value("y", elem_type, dims));
  write_bytes(dir / "add.onnx", model.SerializeAsString());
  return Session::open(dir / "add.onnx", {.provider = "openvino"});
}

TEST(OpenvinoSession, RunsEveryBatchOnOneCompiledModelInFloat32) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", {.provider = "openvino"});
  ASSERT_TRUE(session) << session.error().describe();
  EXPECT_EQ(session->precision(), "f32");
  ASSERT_EQ(session->inputs().size(), 1U);
  EXPECT_EQ(describe_dims(session->inputs()[0]), "Nx4");  // the graph's own names, symbols kept
  for (const int64_t batch : {1, 3, 7}) {
    const Tensor x = filled(DType::float32, {batch, 4}, 1.0F);
    auto outputs = session->run({{"x", &x}});
    ASSERT_TRUE(outputs) << outputs.error().describe();
    ASSERT_EQ(outputs->size(), 1U);
    EXPECT_EQ((*outputs)[0].shape(), (std::vector<int64_t>{batch, 2}));
    for (const float v : (*outputs)[0].values<float>()) EXPECT_FLOAT_EQ(v, 2.0F);  // 4 * 1 * 0.5
  }
}

TEST(OpenvinoSession, TheDefaultConfigurationSaysWhatPrecisionItComputesIn) {
  TempDir dir;
  write_bytes(dir / "m.onnx", matmul_model(4, 2).SerializeAsString());
  auto session = Session::open(dir / "m.onnx", {.provider = "openvino:default"});
  ASSERT_TRUE(session) << session.error().describe();
  // bfloat16 on processors with AMX or AVX512-BF16, float16 on some, float32 elsewhere.
  const std::string precision = session->precision();
  EXPECT_TRUE(precision == "bf16" || precision == "f16" || precision == "f32") << precision;
}

TEST(OpenvinoSession, IntegerOutputsComeBackInTheirDeclaredType) {
  TempDir dir;
  auto session = add_session(dir, 7, {-1});
  ASSERT_TRUE(session) << session.error().describe();
  auto a = *Tensor::zeros(DType::int64, {3});
  auto b = *Tensor::zeros(DType::int64, {3});
  a.mutable_values<int64_t>()[0] = -70000;
  b.mutable_values<int64_t>()[0] = 5;
  auto outputs = session->run({{"a", &a}, {"b", &b}});
  ASSERT_TRUE(outputs) << outputs.error().describe();
  ASSERT_EQ((*outputs)[0].dtype(), DType::int64);
  EXPECT_EQ((*outputs)[0].values<int64_t>()[0], -69995);
  // Values past int32 are another matter: the CPU plugin computes integers in int32 (its "CPU
  // Device" page: inference precision i32), which the proof's own test plants and catches
  // (tests/python/test_openvino.py).
}

TEST(OpenvinoSession, UnsignedBytesGoInAndComeOutAsBytes) {
  TempDir dir;
  // uint8 images and masks: OpenVINO's element types number U8 after U1 to U6.
  auto session = add_session(dir, 2, {-1});
  ASSERT_TRUE(session) << session.error().describe();
  auto a = *Tensor::zeros(DType::uint8, {3});
  auto b = *Tensor::zeros(DType::uint8, {3});
  a.mutable_values<uint8_t>()[0] = 200;
  b.mutable_values<uint8_t>()[0] = 55;
  b.mutable_values<uint8_t>()[2] = 7;
  auto outputs = session->run({{"a", &a}, {"b", &b}});
  ASSERT_TRUE(outputs) << outputs.error().describe();
  ASSERT_EQ((*outputs)[0].dtype(), DType::uint8);
  EXPECT_EQ((*outputs)[0].values<uint8_t>()[0], 255);
  EXPECT_EQ((*outputs)[0].values<uint8_t>()[2], 7);
}

TEST(OpenvinoSession, ScalarsGoInAndComeOut) {
  TempDir dir;
  // y = a + b with a a scalar: the C API's shapes have no rank 0, so the engine makes them itself.
  auto session = add_session(dir, 1, {});
  ASSERT_TRUE(session) << session.error().describe();
  const Tensor a = filled(DType::float32, {}, 1.5F);
  const Tensor b = filled(DType::float32, {}, 2.0F);
  auto outputs = session->run({{"a", &a}, {"b", &b}});
  ASSERT_TRUE(outputs) << outputs.error().describe();
  EXPECT_TRUE((*outputs)[0].shape().empty());
  EXPECT_FLOAT_EQ((*outputs)[0].values<float>()[0], 3.5F);
}

TEST(OpenvinoSession, AModelItCannotReadIsARuntimeErrorNamingOpenvino) {
  TempDir dir;
  const auto model = single_node_model("NoSuchOperator", {tensor_value("x", 1, {2})}, tensor_value("y", 1, {2}));
  write_bytes(dir / "bad.onnx", model.SerializeAsString());
  auto session = Session::open(dir / "bad.onnx", {.provider = "openvino"});
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::runtime);
  EXPECT_NE(session.error().describe().find("OpenVINO"), std::string::npos) << session.error().describe();
  EXPECT_EQ(session.error().describe().find('\n'), std::string::npos) << "one line";
}

TEST(OpenvinoSession, ExternalDataOutsideTheModelsFolderIsRefusedBeforeOpenvinoReadsIt) {
  TempDir dir;
  write_bytes(dir / "m.onnx", model_with_external_weight("../outside.bin").SerializeAsString());
  auto session = Session::open(dir / "m.onnx", {.provider = "openvino"});
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::invalid_input) << session.error().describe();
}

TEST(OpenvinoSession, TheReleaseIsReported) {
  auto version = openvino_version();
  ASSERT_TRUE(version) << version.error().describe();
  EXPECT_TRUE(version->starts_with("2026.4.1")) << *version;
}

}  // namespace
