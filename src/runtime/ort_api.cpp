#include "ort_api.h"

#include <string>

namespace onnxproof::runtime_detail {

Expected<void> bind_onnxruntime_api() {
  static const std::string failure = [] {
    const OrtApiBase* base = OrtGetApiBase();
    if (base == nullptr) return std::string("no ONNX Runtime library is loaded");
    const OrtApi* api = base->GetApi(k_onnxruntime_api_version);
    if (api == nullptr)
      return "the ONNX Runtime library loaded is " + std::string(base->GetVersionString()) +
             ", older than onnxproof needs (C API version " + std::to_string(k_onnxruntime_api_version) +
             ", ONNX Runtime 1." + std::to_string(k_onnxruntime_api_version) + ")";
    Ort::InitApi(api);
    return std::string();
  }();
  if (!failure.empty()) return fail(ErrorCode::runtime, failure);
  return {};
}

}  // namespace onnxproof::runtime_detail
