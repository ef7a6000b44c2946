// TensorProto <-> Tensor, and .pb tensor files.
#include <onnx/onnx-data.pb.h>
#include <onnx/onnx_pb.h>

#include <cstring>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/tensor/tensor_io.h"

namespace onnxproof {
namespace {

std::vector<std::byte> copy_bytes(const void* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size > 0) std::memcpy(bytes.data(), data, size);
  return bytes;
}

// Narrows the typed repeated field into elements of type T (how ONNX stores small types in
// int32_data and unsigned ones in uint64_data).
template <class T, class Field>
std::vector<std::byte> pack_field(const Field& field) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(field.size()) * sizeof(T));
  auto* out = reinterpret_cast<T*>(bytes.data());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
  return bytes;
}

Expected<std::vector<std::byte>> typed_field_bytes(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::float32:
      return pack_field<float>(proto.float_data());
    case DType::complex64:
      return pack_field<float>(proto.float_data());
    case DType::float64:
      return pack_field<double>(proto.double_data());
    case DType::complex128:
      return pack_field<double>(proto.double_data());
    case DType::int64:
      return pack_field<int64_t>(proto.int64_data());
    case DType::int32:
      return pack_field<int32_t>(proto.int32_data());
    case DType::int16:
      return pack_field<int16_t>(proto.int32_data());
    case DType::int8:
      return pack_field<int8_t>(proto.int32_data());
    case DType::uint16:
    case DType::float16:
    case DType::bfloat16:
      return pack_field<uint16_t>(proto.int32_data());
    case DType::uint8:
    case DType::boolean:
    case DType::float8e4m3fn:
    case DType::float8e4m3fnuz:
    case DType::float8e5m2:
    case DType::float8e5m2fnuz:
    // 4-bit types: each int32_data entry holds one byte of two packed elements.
    case DType::uint4:
    case DType::int4:
    case DType::float4e2m1:
      return pack_field<uint8_t>(proto.int32_data());
    case DType::uint32:
      return pack_field<uint32_t>(proto.uint64_data());
    case DType::uint64:
      return pack_field<uint64_t>(proto.uint64_data());
    case DType::string:
    case DType::undefined:
      break;
  }
  return fail(ErrorCode::unsupported, "unsupported element type " + dtype_name(dtype));
}

}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto) {
  const auto dtype = dtype_from_onnx(proto.data_type());
  if (!dtype || *dtype == DType::undefined) {
    return fail(ErrorCode::unsupported,
                "tensor '" + proto.name() + "' has unsupported data type " + std::to_string(proto.data_type()));
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return fail(ErrorCode::unsupported, "tensor '" + proto.name() + "' keeps its data in an external file");
  }
  if (proto.has_segment()) {
    return fail(ErrorCode::unsupported, "tensor '" + proto.name() + "' is segmented");
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  Expected<Tensor> tensor = fail(ErrorCode::internal, "unset");
  if (*dtype == DType::string) {
    tensor = Tensor::from_strings(std::move(shape), {proto.string_data().begin(), proto.string_data().end()});
  } else if (proto.has_raw_data()) {
    tensor = Tensor::from_bytes(*dtype, std::move(shape), copy_bytes(proto.raw_data().data(), proto.raw_data().size()));
  } else {
    ONNXPROOF_TRY_ASSIGN(auto bytes, typed_field_bytes(proto, *dtype));
    tensor = Tensor::from_bytes(*dtype, std::move(shape), std::move(bytes));
  }
  if (!tensor) tensor.error().add_context("tensor '" + proto.name() + "'");
  return tensor;
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (const int64_t dim : tensor.shape()) proto.add_dims(dim);
  if (tensor.dtype() == DType::string) {
    for (const auto& s : tensor.strings()) proto.add_string_data(s);
  } else {
    proto.set_raw_data(reinterpret_cast<const char*>(tensor.bytes().data()), tensor.bytes().size());
  }
  return proto;
}

Expected<NamedTensor> read_tensor_pb(const std::filesystem::path& path, uint64_t max_bytes) {
  auto data = read_file(path, max_bytes);
  if (!data) return std::unexpected(std::move(data.error()));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(*data)) {
    return fail(ErrorCode::invalid_input,
                path.string() + ": not a TensorProto file (protobuf parse failed; truncated?)");
  }
  if (proto.data_type() == 0) {
    return fail(ErrorCode::invalid_input,
                path.string() + ": not a TensorProto file (no data type; an empty sequence or optional?)");
  }
  auto tensor = tensor_from_proto(proto);
  if (!tensor) {
    // SequenceProto and OptionalProto share TensorProto's first field numbers, so they parse as
    // nonsense tensors; say what the file really holds.
    // A tensor with raw_data (a field sequences and optionals do not have) is a damaged tensor.
    onnx::SequenceProto sequence;
    if (!proto.has_raw_data() && sequence.ParseFromString(*data) && sequence.elem_type() >= 1 &&
        sequence.elem_type() <= 5) {
      return fail(ErrorCode::unsupported,
                  path.string() + ": holds a sequence or optional value, not a tensor; onnxproof reads tensors only");
    }
    return std::unexpected(std::move(tensor.error().add_context(path.string())));
  }
  return NamedTensor{proto.name(), std::move(*tensor)};
}

Expected<void> write_tensor_pb(const std::filesystem::path& path, const Tensor& tensor, const std::string& name) {
  const std::string data = tensor_to_proto(tensor, name).SerializeAsString();
  return write_file_atomically(path, data);
}

Expected<NamedTensor> read_tensor_file(const std::filesystem::path& path) {
  const auto extension = path.extension().string();
  if (extension == ".pb") return read_tensor_pb(path);
  if (extension == ".npy") {
    ONNXPROOF_TRY_ASSIGN(auto tensor, read_npy(path));
    return NamedTensor{"", std::move(tensor)};
  }
  return fail(ErrorCode::usage, path.string() + ": unknown tensor file type (expected .pb or .npy)");
}

}  // namespace onnxproof
