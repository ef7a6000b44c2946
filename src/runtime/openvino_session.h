#pragma once
// A model compiled by OpenVINO's CPU plugin, behind Session when the provider is "openvino"
// (INFERENCE_PRECISION_HINT=f32: the float32 numerics a proof gates on) or "openvino:default"
// (no properties: what an application that calls compile_model(path, "CPU") runs, bfloat16 or
// float16 on processors that compute those natively). Dynamic dimensions stay dynamic: every
// swept size runs on the one compiled model. docs/providers.md, "OpenVINO".

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxproof/core/error.h"
#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof::runtime_detail {

class OpenvinoModel {
 public:
  /// Reads `model` (through onnxproof's loader first, which refuses external data outside its
  /// folder), compiles it for the CPU with the provider's properties and describes its inputs and
  /// outputs by the ONNX graph's own names and types. ErrorCode::not_found when OpenVINO is not
  /// installed; ErrorCode::runtime when OpenVINO refuses the model (its message included).
  static Expected<std::unique_ptr<OpenvinoModel>> open(const std::filesystem::path& model,
                                                       const SessionOptions& options);
  /// The same for a serialized model held in memory (no external data): localization's model with
  /// its intermediate values as outputs.
  static Expected<std::unique_ptr<OpenvinoModel>> open_bytes(std::string_view model, const SessionOptions& options);
  ~OpenvinoModel();
  OpenvinoModel(const OpenvinoModel&) = delete;
  OpenvinoModel& operator=(const OpenvinoModel&) = delete;

  const std::vector<SessionValue>& inputs() const { return m_inputs; }
  const std::vector<SessionValue>& outputs() const { return m_outputs; }
  /// The precision the plugin computes in, read back from the compiled model: "f32", "bf16", "f16".
  const std::string& precision() const { return m_precision; }
  /// Runs one inference; `feeds` already validated against inputs(). Outputs in outputs() order.
  Expected<std::vector<Tensor>> run(const std::vector<Feed>& feeds);

 private:
  OpenvinoModel() = default;
  // Describes `graph`, then reads the model (from `path` when set, else from `bytes`) and compiles it.
  static Expected<std::unique_ptr<OpenvinoModel>> compile(const onnx::ModelProto& proto,
                                                          const std::filesystem::path* path, std::string_view bytes,
                                                          const std::string& what, const SessionOptions& options);
  struct Handles;
  std::unique_ptr<Handles> m_handles;
  std::vector<SessionValue> m_inputs;
  std::vector<SessionValue> m_outputs;
  std::string m_precision;
};

}  // namespace onnxproof::runtime_detail
