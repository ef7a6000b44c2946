// The execution providers a session runs on: their names, appending them, and why one cannot run.
#include "session_providers.h"

#include <dlfcn.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "onnxproof/core/atomic_file.h"

namespace onnxproof {
namespace runtime_detail {

struct ProviderName {
  std::string_view short_name;
  std::string_view ort_name;
};

constexpr std::array k_providers = {
    ProviderName{"cpu", "CPUExecutionProvider"},           ProviderName{"cuda", "CUDAExecutionProvider"},
    ProviderName{"tensorrt", "TensorrtExecutionProvider"}, ProviderName{"ort-openvino", "OpenVINOExecutionProvider"},
    ProviderName{"dnnl", "DnnlExecutionProvider"},         ProviderName{"webgpu", "WebGpuExecutionProvider"},
};

std::string short_provider_name(const std::string& ort_name) {
  for (const auto& p : k_providers) {
    if (p.ort_name == ort_name) return std::string(p.short_name);
  }
  return ort_name;
}

// Why a GPU provider cannot run, from ONNX Runtime's message: its own library missing, the CUDA or
// TensorRT libraries it links missing, or no device (or driver) to run on; nullopt when the
// message says none of these (the model's problem, then).
// The folder the loaded libonnxruntime.so.1 lies in (ONNX Runtime loads its provider libraries
// from there); empty when it cannot be told.
std::filesystem::path loaded_library_folder() {
  Dl_info info{};
  if (::dladdr(static_cast<const void*>(OrtGetApiBase()), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  return std::filesystem::weakly_canonical(info.dli_fname, ec).parent_path();
}

namespace {

// The folder the loader found libonnxruntime.so.1 in, links not followed: a release folder may
// link to a library fetched elsewhere and hold its own session-config.
std::filesystem::path loader_folder() {
  Dl_info info{};
  if (::dladdr(static_cast<const void*>(OrtGetApiBase()), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::absolute(info.dli_fname).parent_path();
}

}  // namespace

}  // namespace runtime_detail

Expected<std::vector<std::pair<std::string, std::string>>> read_session_config(const std::filesystem::path& folder) {
  std::vector<std::pair<std::string, std::string>> entries;
  const auto path = folder / "session-config";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) return entries;
  // A FIFO would block the proof, a folder or an unreadable file would drop the deployment's
  // options silently: each is said, never waited on or skipped.
  if (!std::filesystem::is_regular_file(status))
    return fail(ErrorCode::invalid_input,
                path.string() +
                    " is not a regular file: the session options of this ONNX Runtime release cannot "
                    "be read");
  ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(path, uint64_t{1} << 20));
  if (text.find('\0') != std::string::npos)
    return fail(ErrorCode::invalid_input, path.string() + " holds a NUL byte: not a text file of KEY=VALUE lines");
  std::istringstream file(text);
  int number = 0;
  for (std::string line; std::getline(file, line);) {
    ++number;
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto equals = line.find('=');
    if (equals == std::string::npos || equals == first)
      return fail(ErrorCode::invalid_input, path.string() + " line " + std::to_string(number) +
                                                ": expected KEY=VALUE (an ONNX Runtime session config entry)");
    entries.emplace_back(line.substr(first, equals - first), line.substr(equals + 1));
  }
  return entries;
}

namespace runtime_detail {

Expected<std::vector<std::pair<std::string, std::string>>> deployment_session_config() {
  static const auto config = []() -> Expected<std::vector<std::pair<std::string, std::string>>> {
    const auto folder = loader_folder();
    if (folder.empty()) return std::vector<std::pair<std::string, std::string>>{};
    return read_session_config(folder);
  }();
  return config;
}

// ONNX Runtime's CUDA entry point says only "Failed to load shared library": load the provider
// library ourselves to learn which file is missing, the provider's own or one it needs.
std::string diagnose_provider_library(const std::string& provider) {
  const auto folder = loaded_library_folder();
  const auto library = folder / ("libonnxruntime_providers_" + provider + ".so");
  std::error_code ec;
  if (folder.empty() || !std::filesystem::is_regular_file(library, ec)) return "no " + library.string();
  void* handle = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle != nullptr) {
    ::dlclose(handle);
    return "Failed to load shared library (" + library.string() + " itself loads)";
  }
  const char* error = ::dlerror();
  return "Failed to load library " + library.string() + ": " + (error != nullptr ? error : "unknown error");
}

std::optional<std::string> provider_unusable_reason(std::string_view message) {
  const auto has = [&](std::string_view text) { return message.find(text) != std::string_view::npos; };
  if (has("libcuda.so") || has("no CUDA-capable device") || has("cudaErrorNoDevice") || has("CUDA failure 100") ||
      has("CUDA driver") || has("cudaErrorInsufficientDriver") || has("CUDA failure 35")) {
    return "no device: no usable GPU here (no NVIDIA driver's libcuda.so.1, or no device it can use)";
  }
  const bool load_failed = has("Failed to load") || has("cannot open shared object file");
  // The npm CPU build says only "Failed to load shared library"; a GPU build missing a CUDA library
  // names it (libcublasLt.so.13, libcudnn.so.9, libnvinfer.so.10).
  const bool names_dependency = has("libcu") || has("libnv");
  if (load_failed && !names_dependency) {
    return "no provider library: this ONNX Runtime build has no CUDA/TensorRT provider library beside it (the "
           "default CPU build); run `make setup-gpu` and set ONNXPROOF_ONNXRUNTIME=.deps/onnxruntime-gpu "
           "(docs/providers.md)";
  }
  if (load_failed) {
    return "the provider library is there but a library it needs is not (CUDA, cuDNN or TensorRT runtime): "
           "see the message; `make setup-gpu` lists the folders it adds to the library path";
  }
  return std::nullopt;
}

// A provider failure as ErrorCode::not_found when it says the provider cannot run here.
Error provider_error(const std::string& provider, std::string message, ErrorCode otherwise, const std::string& what) {
  if (message.ends_with("Failed to load shared library")) message += " [" + diagnose_provider_library(provider) + "]";
  if (const auto reason = provider_unusable_reason(message)) {
    return Error(ErrorCode::not_found, "execution provider '" + provider + "' cannot run with ONNX Runtime " +
                                           onnxruntime_version() + ": " + *reason + " (ONNX Runtime: " + message + ")");
  }
  return Error(otherwise, what + message);
}

// Appends TensorRT with its engine cache and precision options; CUDA follows it in the caller, so
// the nodes TensorRT rejects go to CUDA before the CPU.
void append_tensorrt(Ort::SessionOptions& session_options, const SessionOptions& options) {
  OrtTensorRTProviderOptionsV2* trt_options = nullptr;
  Ort::ThrowOnError(Ort::GetApi().CreateTensorRTProviderOptions(&trt_options));
  std::unique_ptr<OrtTensorRTProviderOptionsV2, void (*)(OrtTensorRTProviderOptionsV2*)> owned(
      trt_options, Ort::GetApi().ReleaseTensorRTProviderOptions);
  std::vector<std::string> keys;
  std::vector<std::string> values;
  if (!options.tensorrt_cache.empty()) {
    keys = {"trt_engine_cache_enable", "trt_engine_cache_path", "trt_timing_cache_enable", "trt_timing_cache_path"};
    values = {"1", options.tensorrt_cache.string(), "1", options.tensorrt_cache.string()};
  }
  keys.emplace_back("trt_fp16_enable");
  values.emplace_back(options.tensorrt_fp16 ? "1" : "0");
  std::vector<const char*> key_pointers;
  std::vector<const char*> value_pointers;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    key_pointers.push_back(keys[i].c_str());
    value_pointers.push_back(values[i].c_str());
  }
  Ort::ThrowOnError(Ort::GetApi().UpdateTensorRTProviderOptions(trt_options, key_pointers.data(), value_pointers.data(),
                                                                keys.size()));
  session_options.AppendExecutionProvider_TensorRT_V2(*trt_options);
}

Expected<void> append_provider(Ort::SessionOptions& session_options, const SessionOptions& options) {
  const std::string& provider = options.provider;
  const auto available = available_providers();
  if (std::find(available.begin(), available.end(), provider) == available.end()) {
    std::string list;
    for (const auto& p : available) list += (list.empty() ? "" : ", ") + p;
    return fail(ErrorCode::not_found, "execution provider '" + provider + "' is not available in this ONNX Runtime " +
                                          onnxruntime_version() + " build (available: " + list + ")");
  }
  if (provider == "cpu") return {};
  if (provider != "cuda" && provider != "tensorrt") {
    return fail(ErrorCode::unsupported, "onnxproof cannot configure execution provider '" + provider + "' yet");
  }
  // A provider can be compiled in while its shared library or driver is missing (the npm build
  // lists CUDA but ships no CUDA provider library); that shows up here.
  try {
    if (provider == "tensorrt") append_tensorrt(session_options, options);
    OrtCUDAProviderOptionsV2* cuda_options = nullptr;
    Ort::ThrowOnError(Ort::GetApi().CreateCUDAProviderOptions(&cuda_options));
    std::unique_ptr<OrtCUDAProviderOptionsV2, void (*)(OrtCUDAProviderOptionsV2*)> owned(
        cuda_options, Ort::GetApi().ReleaseCUDAProviderOptions);
    // TF32 off: ONNX Runtime's default rounds the inputs of every float32 MatMul and Conv to 10
    // mantissa bits on Ampere and later, so a healthy export lands 70-1500x PyTorch float32's
    // distance from exact (measured on an H200, bench/gpu/RESULTS.md) and the proof would blame
    // the export for a runtime setting (docs/providers.md: what that means for deployment).
    const char* key = "use_tf32";
    const char* value = "0";
    Ort::ThrowOnError(Ort::GetApi().UpdateCUDAProviderOptions(cuda_options, &key, &value, 1));
    session_options.AppendExecutionProvider_CUDA_V2(*cuda_options);
  } catch (const Ort::Exception& error) {
    const std::string message = error.what();
    const Error explained = provider_error(provider, message, ErrorCode::not_found, "");
    if (explained.message().starts_with("execution provider")) return std::unexpected(explained);
    return fail(ErrorCode::not_found, "execution provider '" + provider + "' is compiled into ONNX Runtime " +
                                          onnxruntime_version() + " but cannot be loaded: " + message);
  }
  return {};
}

}  // namespace runtime_detail

std::vector<std::string> available_providers() {
  std::vector<std::string> names;
  if (!runtime_detail::bind_onnxruntime_api()) return names;
  try {
    for (const auto& name : Ort::GetAvailableProviders()) names.push_back(runtime_detail::short_provider_name(name));
  } catch (const Ort::Exception&) {
  }
  return names;
}

}  // namespace onnxproof
