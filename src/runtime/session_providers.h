#pragma once
// Execution providers, for the session's files: ONNX Runtime's names for them, appending one to a
// session's options, and why one cannot run on this machine (session_providers.cpp).

#include "ort_api.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof::runtime_detail {

/// "cpu", "cuda", "tensorrt"... for ONNX Runtime's "CPUExecutionProvider"...; the name itself when unknown.
std::string short_provider_name(const std::string& ort_name);

/// A provider failure as ErrorCode::not_found when it says the provider cannot run here, else `otherwise`.
Error provider_error(const std::string& provider, std::string message, ErrorCode otherwise, const std::string& what);

/// The folder the loaded libonnxruntime.so.1 lies in; empty when it cannot be told.
std::filesystem::path loaded_library_folder();

/// The session options of the deployment the loaded library stands for: the KEY=VALUE lines of a
/// `session-config` file beside it (blank lines and # comments aside), read once; an application
/// embedding that release sets them on its sessions, so every session here gets them too.
/// ErrorCode::invalid_input for a line that is not KEY=VALUE.
Expected<std::vector<std::pair<std::string, std::string>>> deployment_session_config();

/// Appends options.provider (TensorRT with CUDA behind it) to `session_options`; the CPU needs nothing.
Expected<void> append_provider(Ort::SessionOptions& session_options, const SessionOptions& options);

}  // namespace onnxproof::runtime_detail
