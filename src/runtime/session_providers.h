#pragma once
// Execution providers, for the session's files: ONNX Runtime's names for them, appending one to a
// session's options, and why one cannot run on this machine (session_providers.cpp).

#include "ort_api.h"

#include <string>

#include "onnxproof/core/error.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof::runtime_detail {

/// "cpu", "cuda", "tensorrt"... for ONNX Runtime's "CPUExecutionProvider"...; the name itself when unknown.
std::string short_provider_name(const std::string& ort_name);

/// A provider failure as ErrorCode::not_found when it says the provider cannot run here, else `otherwise`.
Error provider_error(const std::string& provider, std::string message, ErrorCode otherwise, const std::string& what);

/// Appends options.provider (TensorRT with CUDA behind it) to `session_options`; the CPU needs nothing.
Expected<void> append_provider(Ort::SessionOptions& session_options, const SessionOptions& options);

}  // namespace onnxproof::runtime_detail
