#pragma once
// ONNX Runtime's C++ API, bound by hand to the library loaded at run time instead of by a static
// initializer: the engine runs with any release from the oldest API version it needs on (a proof
// per runtime version, docs/cli.md), and an older library answers GetApi(newer) with nullptr.
// Every file of the engine that uses ONNX Runtime includes this header, never the API's own.
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT

#include "onnxproof/core/error.h"

namespace onnxproof::runtime_detail {

// The C API version the engine asks for: the oldest that has every function it calls (the
// newest of them, CreateCUDAProviderOptions and UpdateCUDAProviderOptions, came with 1.11).
inline constexpr uint32_t k_onnxruntime_api_version = 11;

/// Binds the C++ API to the loaded library (once; later calls return the first outcome). Fails
/// with ErrorCode::runtime, naming the library's version, when it is older than the API above.
Expected<void> bind_onnxruntime_api();

}  // namespace onnxproof::runtime_detail
