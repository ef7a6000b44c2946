#include "onnxproof/report/versions.h"

#include "build_config.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof {

std::string onnxproof_version() { return ONNXPROOF_VERSION; }

std::vector<std::pair<std::string, std::string>> tool_versions() {
  return {
      {"onnxproof", ONNXPROOF_VERSION},           {"onnx", ONNXPROOF_ONNX_VERSION},
      {"protobuf", ONNXPROOF_PROTOBUF_VERSION},   {"onnxruntime", onnxruntime_version()},
      {"onnxruntime-build", ONNXPROOF_ORT_STAMP},
  };
}

}  // namespace onnxproof
