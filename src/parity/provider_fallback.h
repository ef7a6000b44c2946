#pragma once
// PROVIDER_FALLBACK findings for a GPU provider (provider_fallback.cpp), for run_parity.

#include <filesystem>

#include "onnxproof/parity/parity.h"
#include "onnxproof/runtime/session.h"

namespace onnxproof::detail {

/// PROVIDER_FALLBACK for `session`'s provider, from ONNX Runtime's profile of the first case;
/// when the profile cannot be had, from a session that forbids the CPU fallback (it names no nodes).
void add_fallback_findings(const std::filesystem::path& model, const Reference& reference,
                           const SessionOptions& session, ParityResult& result);

}  // namespace onnxproof::detail
