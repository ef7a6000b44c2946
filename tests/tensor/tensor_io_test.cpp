#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "onnxproof/tensor/tensor_io.h"
#include "test_support.h"

using namespace onnxproof;
using onnxproof::testing::TempDir;
using onnxproof::testing::write_bytes;

namespace {

Tensor sample_tensor(DType dtype, std::vector<int64_t> shape) {
  auto tensor = Tensor::zeros(dtype, std::move(shape));
  EXPECT_TRUE(tensor.has_value());
  auto bytes = tensor->mutable_bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 37 + 11) & 0x7F);
  return std::move(*tensor);
}

const DType k_all_dtypes[] = {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8,
                              DType::int16,   DType::int32,   DType::int64,    DType::uint8,   DType::uint16,
                              DType::uint32,  DType::uint64,  DType::boolean};

class EveryDType : public ::testing::TestWithParam<DType> {};

TEST_P(EveryDType, PbRoundTripKeepsNameShapeAndBytes) {
  TempDir dir;
  const Tensor original = sample_tensor(GetParam(), {2, 3, 4});
  ASSERT_TRUE(write_tensor_pb(dir / "t.pb", original, "x"));
  auto read = read_tensor_pb(dir / "t.pb");
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->name, "x");
  EXPECT_EQ(read->tensor.dtype(), GetParam());
  EXPECT_EQ(read->tensor.shape(), original.shape());
  EXPECT_TRUE(std::equal(read->tensor.bytes().begin(), read->tensor.bytes().end(), original.bytes().begin(),
                         original.bytes().end()));
}

TEST_P(EveryDType, NpyRoundTripKeepsShapeAndBytes) {
  TempDir dir;
  const Tensor original = sample_tensor(GetParam(), {5, 3});
  ASSERT_TRUE(write_npy(dir / "t.npy", original));
  auto read = read_npy(dir / "t.npy");
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->dtype(), GetParam());
  EXPECT_EQ(read->shape(), original.shape());
  EXPECT_TRUE(std::equal(read->bytes().begin(), read->bytes().end(), original.bytes().begin(), original.bytes().end()));
}

INSTANTIATE_TEST_SUITE_P(Tensor, EveryDType, ::testing::ValuesIn(k_all_dtypes),
                         [](const auto& param_info) { return dtype_name(param_info.param); });

TEST(TensorProto, ReadsTypedFieldsAsWellAsRawData) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT16);
  proto.add_dims(2);
  proto.add_int32_data(float_to_half(1.5F));
  proto.add_int32_data(float_to_half(-2.0F));
  auto tensor = tensor_from_proto(proto);
  ASSERT_TRUE(tensor) << tensor.error().describe();
  EXPECT_EQ(tensor->value_as_double(0), 1.5);
  EXPECT_EQ(tensor->value_as_double(1), -2.0);
}

TEST(TensorProto, RawDataThatDoesNotMatchTheShapeIsAnError) {
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(4);
  proto.set_raw_data(std::string(12, '\0'));  // 3 floats, not 4
  auto tensor = tensor_from_proto(proto);
  ASSERT_FALSE(tensor);
  EXPECT_NE(tensor.error().describe().find("needs 16 bytes, got 12"), std::string::npos) << tensor.error().describe();
}

// The same from a .pb file: a short raw_data is a damaged tensor, not "a sequence or optional".
TEST(TensorProto, AShortRawDataFileIsCalledADamagedTensor) {
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(4);
  proto.set_raw_data(std::string(8, '\0'));
  TempDir dir;
  write_bytes(dir / "short.pb", proto.SerializeAsString());
  const auto read = read_tensor_pb(dir / "short.pb");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().describe().find("sequence or optional"), std::string::npos) << read.error().describe();
  EXPECT_NE(read.error().describe().find("needs 16 bytes, got 8"), std::string::npos) << read.error().describe();
}

TEST(TensorProto, StringTensorsRoundTrip) {
  TempDir dir;
  auto tensor = Tensor::from_strings({2}, {"monday", "tuesday"});
  ASSERT_TRUE(tensor);
  ASSERT_TRUE(write_tensor_pb(dir / "s.pb", *tensor, "s"));
  auto read = read_tensor_pb(dir / "s.pb");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->tensor.strings(), (std::vector<std::string>{"monday", "tuesday"}));
}

TEST(TensorProto, TruncatedFileIsAnError) {
  TempDir dir;
  const Tensor original = sample_tensor(DType::float32, {64});
  ASSERT_TRUE(write_tensor_pb(dir / "t.pb", original, "x"));
  std::ifstream in(dir / "t.pb", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  write_bytes(dir / "cut.pb", bytes.substr(0, bytes.size() / 2));
  auto read = read_tensor_pb(dir / "cut.pb");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), ErrorCode::invalid_input);
}

TEST(TensorProto, MissingFileIsNotFound) {
  auto read = read_tensor_pb("/nonexistent/t.pb");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), ErrorCode::not_found);
}

// A version 1.0 .npy file with the given header dict and data bytes.
std::string npy_file(std::string header, const std::string& data) {
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xFF);
  file += static_cast<char>(header.size() >> 8);
  return file + header + data;
}

TEST(Npy, WrongMagicIsAnError) {
  TempDir dir;
  write_bytes(dir / "x.npy", "this is not numpy");
  auto read = read_npy(dir / "x.npy");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().describe().find("wrong magic"), std::string::npos);
}

TEST(Npy, ShapeThatDoesNotMatchTheByteCountIsAnError) {
  TempDir dir;
  write_bytes(dir / "x.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000), }",
                                      std::string(16, '\0')));
  auto read = read_npy(dir / "x.npy");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().describe().find("needs 4000000000000 data bytes, file has 16"), std::string::npos)
      << read.error().describe();
}

TEST(Npy, FortranOrderAndBigEndianAreConvertedToRowMajorLittleEndian) {
  TempDir dir;
  // A 2x3 int16 array [[1,2,3],[4,5,6]] stored column-major and big-endian.
  std::string data;
  for (const int v : {1, 4, 2, 5, 3, 6}) {
    data += '\0';
    data += static_cast<char>(v);
  }
  write_bytes(dir / "f.npy", npy_file("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }", data));
  auto read = read_npy(dir / "f.npy");
  ASSERT_TRUE(read) << read.error().describe();
  const auto values = read->values<int16_t>();
  EXPECT_EQ(std::vector<int16_t>(values.begin(), values.end()), (std::vector<int16_t>{1, 2, 3, 4, 5, 6}));
}

TEST(DType, HalfAndBfloat16ConversionsRoundToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(0.1F)), 0.0999755859375F);
  EXPECT_EQ(float_to_half(65520.0F), 0x7C00);  // rounds up to +inf
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0F, -24));
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.00390625F)), 1.0F);  // tie goes to even
  EXPECT_EQ(dtype_from_name("float32"), DType::float32);
  EXPECT_EQ(dtype_from_name("bool"), DType::boolean);
  EXPECT_FALSE(dtype_from_name("float128"));
}

}  // namespace

// The narrow types of opsets 19 and 21: float8 one byte per element, int4/uint4/float4 two per
// byte (the first element in the low 4 bits), in raw_data and in int32_data alike.
TEST(NarrowTypes, Float8ValuesDecodeAsOnnxDefinesThem) {
  EXPECT_EQ(narrow_float_to_double(DType::float8e4m3fn, 0x38), 1.0);    // 0 0111 000
  EXPECT_EQ(narrow_float_to_double(DType::float8e4m3fn, 0x7E), 448.0);  // the largest finite
  EXPECT_TRUE(std::isnan(narrow_float_to_double(DType::float8e4m3fn, 0x7F)));
  EXPECT_EQ(narrow_float_to_double(DType::float8e4m3fn, 0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(narrow_float_to_double(DType::float8e4m3fnuz, 0x40), 1.0);                // bias 8
  EXPECT_TRUE(std::isnan(narrow_float_to_double(DType::float8e4m3fnuz, 0x80)));
  EXPECT_EQ(narrow_float_to_double(DType::float8e5m2, 0x3C), 1.0);
  EXPECT_EQ(narrow_float_to_double(DType::float8e5m2, 0xFC), -INFINITY);
  EXPECT_EQ(narrow_float_to_double(DType::float8e5m2fnuz, 0x7F), 57344.0);  // no inf: the top code is finite
  EXPECT_EQ(narrow_float_to_double(DType::float4e2m1, 0x7), 6.0);
  EXPECT_EQ(narrow_float_to_double(DType::float4e2m1, 0x9), -0.5);
}

TEST(NarrowTypes, FourBitTensorsPackTwoElementsPerByte) {
  // int4 [-8, 7, -1] packed: byte 0 = 0x78 (low nibble -8 = 0x8, high nibble 7), byte 1 = 0x0F.
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::INT4);
  proto.add_dims(3);
  proto.set_raw_data(std::string("\x78\x0F", 2));
  auto raw = tensor_from_proto(proto);
  ASSERT_TRUE(raw) << raw.error().describe();
  EXPECT_EQ(raw->size(), 3);
  EXPECT_EQ(raw->bytes().size(), 2U);
  EXPECT_EQ(raw->value_as_double(0), -8.0);
  EXPECT_EQ(raw->value_as_double(1), 7.0);
  EXPECT_EQ(raw->value_as_double(2), -1.0);
  // The same values in int32_data: one packed byte per entry.
  proto.clear_raw_data();
  proto.add_int32_data(0x78);
  proto.add_int32_data(0x0F);
  auto typed = tensor_from_proto(proto);
  ASSERT_TRUE(typed) << typed.error().describe();
  EXPECT_TRUE(std::equal(typed->bytes().begin(), typed->bytes().end(), raw->bytes().begin(), raw->bytes().end()));
  // Three uint4 elements need two bytes, not three.
  EXPECT_FALSE(Tensor::from_bytes(DType::uint4, {3}, std::vector<std::byte>(3)));
  EXPECT_EQ(Tensor::zeros(DType::float4e2m1, {5})->bytes().size(), 3U);
}

TEST(NarrowTypes, Float8RoundTripsThroughPbFiles) {
  TempDir dir;
  const Tensor original = sample_tensor(DType::float8e5m2, {2, 3});
  ASSERT_TRUE(write_tensor_pb(dir / "t.pb", original, "x"));
  auto read = read_tensor_pb(dir / "t.pb");
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->tensor.dtype(), DType::float8e5m2);
  EXPECT_TRUE(std::equal(read->tensor.bytes().begin(), read->tensor.bytes().end(), original.bytes().begin(),
                         original.bytes().end()));
}
