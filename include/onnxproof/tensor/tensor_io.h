#pragma once
// Tensor files: ONNX TensorProto (.pb, the layout of ONNX's backend tests and ORT's test runner)
// and numpy .npy. Every reader checks the byte count against the shape before allocating.

#include <cstdint>
#include <filesystem>
#include <string>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace onnxproof {

/// A tensor with the name it carried in its file (empty for .npy).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Limit on tensor files read from disk (protobuf itself stops at 2 GiB).
inline constexpr uint64_t k_default_max_tensor_file_bytes = (uint64_t{1} << 31) - 1;

/// Converts a TensorProto (raw_data or the typed *_data fields). Fails on an unsupported type,
/// external data, or a data length that does not match the dims.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto);

/// Converts to a TensorProto with raw_data (string tensors use string_data).
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

/// Reads a TensorProto .pb file.
Expected<NamedTensor> read_tensor_pb(const std::filesystem::path& path,
                                     uint64_t max_bytes = k_default_max_tensor_file_bytes);

/// Writes a TensorProto .pb file atomically.
Expected<void> write_tensor_pb(const std::filesystem::path& path, const Tensor& tensor, const std::string& name);

/// Reads a .npy file (format 1.0-3.0, either byte order, C or Fortran order; bfloat16 as '|V2').
Expected<Tensor> read_npy(const std::filesystem::path& path, uint64_t max_bytes = uint64_t{1} << 36);

/// Writes a .npy file atomically (format 1.0, little-endian, C order). Fails for string tensors.
Expected<void> write_npy(const std::filesystem::path& path, const Tensor& tensor);

/// Reads .pb or .npy by extension.
Expected<NamedTensor> read_tensor_file(const std::filesystem::path& path);

}  // namespace onnxproof
