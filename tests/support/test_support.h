#pragma once
// Helpers shared by the unit tests: temporary folders and small models built in code.

#include <filesystem>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxproof::testing {

/// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

 private:
  std::filesystem::path m_path;
};

/// A value info for a float32 tensor; dims < 0 become symbolic ("N").
onnx::ValueInfoProto tensor_value(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims);

/// A model of one node: y = op(inputs...), opset `opset` of the default domain, IR version 8.
onnx::ModelProto single_node_model(const std::string& op_type, const std::vector<onnx::ValueInfoProto>& inputs,
                                   const onnx::ValueInfoProto& output, int64_t opset = 17,
                                   const std::string& domain = "");

/// y = x @ W + 0 with W (k x m, float32, values 0.5) as an initializer; x is N x k with N symbolic.
onnx::ModelProto matmul_model(int64_t k, int64_t m);

/// matmul_model(4, 2) with its weight in external data at `location` (offset 0, 32 bytes).
onnx::ModelProto model_with_external_weight(const std::string& location);

/// cond -> If with then/else branches that each output a Constant [1.0] (and, with
/// `dead_constant_per_branch`, a second Constant nothing reads).
onnx::ModelProto if_model_with_constant_branches(bool dead_constant_per_branch);

/// Writes bytes to a file (no atomicity needed in tests).
void write_bytes(const std::filesystem::path& path, const std::string& bytes);

/// The version python/requirements.lock pins `package` at ("2.15.0" for "torch"); fails the
/// calling test (and returns "") when the lock has no `package==` line.
std::string locked_version(const std::string& package);

}  // namespace onnxproof::testing
