#pragma once
// Loading and saving ONNX models, with external data kept safely inside the model's folder.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/core/ownership.h"
#include "onnxproof/model/graph_walk.h"

namespace onnxproof {

struct LoadOptions {
  /// The .onnx file itself; protobuf cannot parse more than 2 GiB.
  uint64_t max_model_bytes = (uint64_t{1} << 31) - 1;
  /// All external data files together.
  uint64_t max_external_bytes = uint64_t{1} << 40;
  /// Read external tensor data into raw_data (needed to save the model elsewhere). When false,
  /// the references are only validated.
  bool load_external_data = false;
};

/// Where an external tensor's bytes lay, in its model's folder, when the model was loaded.
struct ExternalSource {
  std::string location;  // relative to the model's folder, as the model names it
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct LoadedModel {
  onnx::ModelProto proto;
  std::filesystem::path path;    // as given
  std::filesystem::path folder;  // canonical folder of the model: where external data must lie
  uint64_t file_bytes = 0;
  uint64_t external_bytes = 0;  // bytes of tensor data in external files
  int external_tensors = 0;
  std::vector<std::filesystem::path> external_files;       // the external data files, resolved
  std::map<std::string, ExternalSource> external_sources;  // each named external tensor's bytes, by name
};

/// The model file and the external data files it names (resolved in its folder): the files an
/// output must never overwrite.
std::vector<std::filesystem::path> model_files(const LoadedModel& model);

/// model_files() as the inputs of a command that reads `model`, for require_output_apart().
CommandInputs model_inputs(const LoadedModel& model);

/// Loads an ONNX model. Fails (with the path in the message) when the file is missing, over the
/// size limit, not a protobuf ModelProto, has no graph, or has external data whose location is
/// absolute, contains "..", leaves the model's folder through a symlink, is missing, or is shorter
/// than offset + length. Never modifies the file.
Expected<LoadedModel> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

/// Parses a model from bytes in memory (no external data allowed to be loaded).
Expected<onnx::ModelProto> parse_model(std::string_view bytes, const std::string& what);

/// The model's ai.onnx opset (the default domain's import), 0 when it imports none.
int default_domain_opset(const onnx::ModelProto& model);

struct SaveOptions {
  /// Write tensors of at least `external_threshold_bytes` into "<file name>.data" beside the model.
  /// Automatic (the default) when the model would not fit in one 2 GiB protobuf.
  enum class External { automatic, always, never };
  External external = External::automatic;
  uint64_t external_threshold_bytes = 1024;
  /// A tensor whose bytes are still the ones its model was loaded from (`shared_sources`, in
  /// `shared_folder`) is written as a reference to them when the model is saved into that folder,
  /// not copied: a simplified model shares the export's weights file for every weight no rule
  /// changed. The bytes are compared with the file's, never assumed.
  const std::map<std::string, ExternalSource>* shared_sources = nullptr;
  std::filesystem::path shared_folder{};
};

/// Saves atomically: the model (and its external data file) are written to temporary files in
/// the destination folder, then renamed into place. The model's tensors must hold their bytes
/// (load with load_external_data). With external data, each large tensor's bytes are moved out
/// of the proto while writing and moved back before returning, so nothing is copied and the
/// model is unchanged on return.
Expected<void> save_model(onnx::ModelProto& model, const std::filesystem::path& path, const SaveOptions& options = {});

/// A copy of the model in which initializers over `threshold` bytes keep their name, type and dims
/// but no bytes: enough for shape inference, and the weights are never held twice. The bytes are
/// moved aside while copying and moved back, so `model` is unchanged on return (do not read it
/// from another thread meanwhile).
onnx::ModelProto copy_without_large_tensors(const onnx::ModelProto& model, uint64_t threshold = 4096);

/// Calls `visit` for every TensorProto held by the model: initializers, sparse initializer
/// values/indices, Constant node attributes, in every subgraph and local function.
void for_each_tensor(onnx::ModelProto& model, const std::function<void(onnx::TensorProto&)>& visit);
void for_each_tensor(const onnx::ModelProto& model, const std::function<void(const onnx::TensorProto&)>& visit);

}  // namespace onnxproof
