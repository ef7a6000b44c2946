#include "onnxproof/runtime/session.h"

#include <onnx/onnx_pb.h>
#include <dlfcn.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/name_table.h"
#include "onnxproof/core/ownership.h"

namespace onnxproof {
namespace {

struct ProviderName {
  std::string_view short_name;
  std::string_view ort_name;
};

constexpr std::array k_providers = {
    ProviderName{"cpu", "CPUExecutionProvider"},           ProviderName{"cuda", "CUDAExecutionProvider"},
    ProviderName{"tensorrt", "TensorrtExecutionProvider"}, ProviderName{"openvino", "OpenVINOExecutionProvider"},
    ProviderName{"dnnl", "DnnlExecutionProvider"},         ProviderName{"webgpu", "WebGpuExecutionProvider"},
};

std::string short_provider_name(const std::string& ort_name) {
  for (const auto& p : k_providers) {
    if (p.ort_name == ort_name) return std::string(p.short_name);
  }
  return ort_name;
}

// One environment per process, as ONNX Runtime requires; created on first use. Its own log is
// kept to fatal messages: every failure reaches the user once, as an Error.
Expected<Ort::Env*> shared_env() {
  static std::unique_ptr<Ort::Env> env;
  static std::string failure;
  if (!env && failure.empty()) {
    try {
      // A proof tool sends and stores no telemetry. ONNX Runtime 1.30's POSIX telemetry (1DS)
      // otherwise keeps a device id and an event database under ~/.cache/Microsoft/DeveloperTools/
      // and writes mat-debug-PID.log into the temporary folder; ORT_DISABLE_TELEMETRY=1 before
      // the first Env is its documented full opt-out (onnxruntime PR #27379).
      ::setenv("ORT_DISABLE_TELEMETRY", "1", 1);
      env = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_FATAL, "onnxproof");
      env->DisableTelemetryEvents();
    } catch (const Ort::Exception& error) {
      failure = error.what();
    }
  }
  if (!env) return fail(ErrorCode::runtime, "cannot start ONNX Runtime: " + failure);
  return env.get();
}

SessionValue describe_type(std::string name, const Ort::TypeInfo& info) {
  SessionValue value;
  value.name = std::move(name);
  switch (info.GetONNXType()) {
    case ONNX_TYPE_TENSOR: {
      const auto tensor = info.GetTensorTypeAndShapeInfo();
      const auto dtype = dtype_from_onnx(static_cast<int32_t>(tensor.GetElementType()));
      value.dtype = dtype.value_or(DType::undefined);
      value.type = dtype_name(value.dtype);
      value.shape = tensor.GetShape();
      std::vector<const char*> symbols(value.shape.size(), nullptr);
      tensor.GetSymbolicDimensions(symbols.data(), symbols.size());
      for (const char* symbol : symbols) value.symbols.emplace_back(symbol ? symbol : "");
      break;
    }
    case ONNX_TYPE_SEQUENCE:
      value.is_tensor = false;
      value.type = "sequence";
      break;
    case ONNX_TYPE_MAP:
      value.is_tensor = false;
      value.type = "map";
      break;
    case ONNX_TYPE_OPTIONAL:
      value.is_tensor = false;
      value.type = "optional";
      break;
    default:
      value.is_tensor = false;
      value.type = "unknown";
      break;
  }
  return value;
}

Expected<Ort::Value> to_ort_value(const Tensor& tensor) {
  const auto element_type = static_cast<ONNXTensorElementDataType>(tensor.dtype());
  const auto& shape = tensor.shape();
  if (tensor.dtype() == DType::string) {
    Ort::AllocatorWithDefaultOptions allocator;
    auto value = Ort::Value::CreateTensor(allocator, shape.data(), shape.size(), element_type);
    std::vector<const char*> pointers;
    pointers.reserve(tensor.strings().size());
    for (const auto& s : tensor.strings()) pointers.push_back(s.c_str());
    value.FillStringTensor(pointers.data(), pointers.size());
    return value;
  }
  static const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  // ONNX Runtime does not write to input buffers; the cast only satisfies the C API's signature.
  auto* data = const_cast<std::byte*>(tensor.bytes().data());
  return Ort::Value::CreateTensor(cpu, data, tensor.bytes().size(), shape.data(), shape.size(), element_type);
}

Expected<Tensor> from_ort_value(const std::string& name, const Ort::Value& value) {
  if (!value.IsTensor()) {
    return fail(ErrorCode::unsupported, "output '" + name + "' is not a tensor (sequence, map or optional)");
  }
  const auto info = value.GetTensorTypeAndShapeInfo();
  const auto dtype = dtype_from_onnx(static_cast<int32_t>(info.GetElementType()));
  if (!dtype) {
    return fail(ErrorCode::unsupported, "output '" + name + "' has unsupported element type " +
                                            std::to_string(static_cast<int>(info.GetElementType())));
  }
  std::vector<int64_t> shape = info.GetShape();
  if (*dtype == DType::string) {
    const std::size_t count = info.GetElementCount();
    std::vector<std::string> strings(count);
    for (std::size_t i = 0; i < count; ++i) strings[i] = value.GetStringTensorElement(i);
    return Tensor::from_strings(std::move(shape), std::move(strings));
  }
  const auto bytes = static_cast<std::size_t>(dtype_storage_bytes(*dtype, info.GetElementCount()));
  std::vector<std::byte> data(bytes);
  if (bytes > 0) std::memcpy(data.data(), value.GetTensorRawData(), bytes);
  return Tensor::from_bytes(*dtype, std::move(shape), std::move(data));
}

// One name table for the levels: optimization_name and parse_optimization both read it.
constexpr NameTable<GraphOptimization, 4> k_level_names = {
    {GraphOptimization::disabled, "disabled"},
    {GraphOptimization::basic, "basic"},
    {GraphOptimization::extended, "extended"},
    {GraphOptimization::all, "all"},
};

GraphOptimizationLevel ort_level(GraphOptimization level) {
  switch (level) {
    case GraphOptimization::disabled:
      return ORT_DISABLE_ALL;
    case GraphOptimization::basic:
      return ORT_ENABLE_BASIC;
    case GraphOptimization::extended:
      return ORT_ENABLE_EXTENDED;
    case GraphOptimization::all:
      return ORT_ENABLE_ALL;
  }
  return ORT_ENABLE_ALL;
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
  Ort::ThrowOnError(Ort::GetApi().UpdateTensorRTProviderOptions(trt_options, key_pointers.data(),
                                                                value_pointers.data(), keys.size()));
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

}  // namespace

std::string_view optimization_name(GraphOptimization level) { return name_in(k_level_names, level); }

std::optional<GraphOptimization> parse_optimization(std::string_view name) { return parse_in(k_level_names, name); }

struct Session::Impl {
  Ort::Session session{nullptr};
  SessionOptions options;
  std::vector<SessionValue> inputs;
  std::vector<SessionValue> outputs;
  std::vector<std::string> output_names;
};

Session::Session(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const std::vector<SessionValue>& Session::inputs() const { return m_impl->inputs; }
const std::vector<SessionValue>& Session::outputs() const { return m_impl->outputs; }
const SessionOptions& Session::options() const { return m_impl->options; }

Expected<Session> Session::open(const std::filesystem::path& model, const SessionOptions& options) {
  ONNXPROOF_TRY(require_regular_file(model));  // ONNX Runtime opens it itself, FIFO or not
  return open_from(&model, {}, model.string(), options);
}

Expected<Session> Session::open_bytes(std::string_view model, const SessionOptions& options) {
  return open_from(nullptr, model, "the model in memory", options);
}

Expected<Session> Session::open_from(const std::filesystem::path* path, std::string_view bytes, const std::string& what,
                                     const SessionOptions& options) {
  ONNXPROOF_TRY_ASSIGN(Ort::Env * env, shared_env());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  try {
    Ort::SessionOptions session_options;
    session_options.SetGraphOptimizationLevel(ort_level(options.optimization));
    session_options.SetIntraOpNumThreads(options.intra_op_threads);
    session_options.SetInterOpNumThreads(1);
    if (options.forbid_cpu_fallback) session_options.AddConfigEntry("session.disable_cpu_ep_fallback", "1");
    if (!options.disabled_optimizers.empty()) {
      // Separated by ';': ONNX Runtime 1.30 splits the list there (its header says commas; a
      // comma-separated list disables nothing, measured).
      std::string names;
      for (const auto& name : options.disabled_optimizers) names += (names.empty() ? "" : ";") + name;
      session_options.AddConfigEntry("optimization.disable_specified_optimizers", names.c_str());
    }
    ONNXPROOF_TRY(append_provider(session_options, options));
    if (!options.profile_prefix.empty()) session_options.EnableProfiling(options.profile_prefix.c_str());
    impl->session = path ? Ort::Session(*env, path->c_str(), session_options)
                         : Ort::Session(*env, bytes.data(), bytes.size(), session_options);

    Ort::AllocatorWithDefaultOptions allocator;
    for (std::size_t i = 0; i < impl->session.GetInputCount(); ++i) {
      auto name = impl->session.GetInputNameAllocated(i, allocator);
      impl->inputs.push_back(describe_type(name.get(), impl->session.GetInputTypeInfo(i)));
    }
    for (std::size_t i = 0; i < impl->session.GetOutputCount(); ++i) {
      auto name = impl->session.GetOutputNameAllocated(i, allocator);
      impl->outputs.push_back(describe_type(name.get(), impl->session.GetOutputTypeInfo(i)));
      impl->output_names.emplace_back(name.get());
    }
  } catch (const Ort::Exception& error) {
    // A GPU provider without a device fails here, not when appended: not the model's problem.
    if (options.provider != "cpu") {
      return std::unexpected(
          provider_error(options.provider, error.what(), ErrorCode::runtime, "ONNX Runtime cannot load " + what + ": "));
    }
    return fail(ErrorCode::runtime, "ONNX Runtime cannot load " + what + ": " + error.what());
  }
  return Session(std::move(impl));
}

namespace {

// A serialized ModelProto with one Identity node at `opset` and `ir_version`, written by hand
// (ONNX Runtime is the only dependency of this folder): graph { node, input x, output y }.
std::string identity_model(int opset, int ir_version) {
  onnx::ModelProto model;
  model.set_ir_version(ir_version);
  model.add_opset_import()->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("opset_probe");
  auto* node = graph->add_node();
  node->set_op_type("Identity");
  node->add_input("x");
  node->add_output("y");
  for (auto* value : {graph->add_input(), graph->add_output()}) {
    value->set_name(value == &graph->input(0) ? "x" : "y");
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(1);
  }
  return model.SerializeAsString();
}

bool accepts(Ort::Env& env, int opset, int ir_version) {
  const std::string bytes = identity_model(opset, ir_version);
  try {
    Ort::SessionOptions options;
    options.SetIntraOpNumThreads(1);
    Ort::Session session(env, bytes.data(), bytes.size(), options);
    return true;
  } catch (const Ort::Exception&) {
    return false;
  }
}

// The last value in [low, high) that `accepted` takes (acceptance is monotonic), 0 when not even
// `low` is.
int last_accepted(int low, int high, const std::function<bool(int)>& accepted) {
  if (!accepted(low)) return 0;
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    (accepted(middle) ? low : high) = middle;
  }
  return low;
}

}  // namespace

int onnxruntime_newest_opset() {
  static const int newest = [] {
    auto env = shared_env();
    // 7: the oldest opset ONNX Runtime supports; IR version 10 knows every opset up to 21+.
    return env ? last_accepted(7, 64, [&](int opset) { return accepts(**env, opset, 10); }) : 0;
  }();
  return newest;
}

int onnxruntime_newest_ir_version() {
  static const int newest = [] {
    auto env = shared_env();
    return env ? last_accepted(3, 64, [&](int ir_version) { return accepts(**env, 13, ir_version); }) : 0;
  }();
  return newest;
}

std::string describe_dims(const SessionValue& value) {
  if (value.shape.empty()) return "scalar";
  std::string text;
  for (std::size_t i = 0; i < value.shape.size(); ++i) {
    if (i > 0) text += 'x';
    if (value.shape[i] >= 0) {
      text += std::to_string(value.shape[i]);
    } else {
      text += i < value.symbols.size() && !value.symbols[i].empty() ? value.symbols[i] : "?";
    }
  }
  return text;
}

Expected<void> Session::validate(const std::vector<Feed>& feeds) const {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& feed : feeds) {
    const bool known = std::any_of(m_impl->inputs.begin(), m_impl->inputs.end(),
                                   [&](const SessionValue& v) { return v.name == feed.name; });
    if (!known) {
      std::string names;
      for (const auto& v : m_impl->inputs) names += (names.empty() ? "" : ", ") + v.name;
      return fail(ErrorCode::usage, "'" + feed.name + "' is not an input of the model (inputs: " + names + ")");
    }
    if (!by_name.emplace(feed.name, feed.tensor).second) {
      return fail(ErrorCode::usage, "input '" + feed.name + "' is given twice");
    }
  }
  for (const auto& input : m_impl->inputs) {
    const std::string expected = input.type + " " + describe_dims(input);
    const auto it = by_name.find(input.name);
    if (it == by_name.end()) return fail(ErrorCode::usage, "input '" + input.name + "' (" + expected + ") is missing");
    if (!input.is_tensor) {
      return fail(ErrorCode::unsupported,
                  "input '" + input.name + "' is a " + input.type + "; onnxproof feeds tensors only");
    }
    const Tensor& tensor = *it->second;
    const std::string got = dtype_name(tensor.dtype()) + " " + format_shape(tensor.shape());
    if (tensor.dtype() != input.dtype) {
      return fail(ErrorCode::usage,
                  "input '" + input.name + "': expected " + expected + ", got " + got + " (wrong dtype)");
    }
    if (tensor.rank() != input.shape.size()) {
      return fail(ErrorCode::usage,
                  "input '" + input.name + "': expected " + expected + ", got " + got + " (wrong rank)");
    }
    for (std::size_t axis = 0; axis < input.shape.size(); ++axis) {
      if (input.shape[axis] >= 0 && input.shape[axis] != tensor.shape()[axis]) {
        return fail(ErrorCode::usage, "input '" + input.name + "': expected " + expected + ", got " + got + " (axis " +
                                          std::to_string(axis) + " is fixed at " + std::to_string(input.shape[axis]) +
                                          ")");
      }
    }
  }
  return {};
}

Expected<std::vector<Tensor>> Session::run(const std::vector<Feed>& feeds) {
  ONNXPROOF_TRY(validate(feeds));
  try {
    std::vector<const char*> input_names;
    std::vector<Ort::Value> input_values;
    for (const auto& feed : feeds) {
      input_names.push_back(feed.name.c_str());
      ONNXPROOF_TRY_ASSIGN(auto value, to_ort_value(*feed.tensor));
      input_values.push_back(std::move(value));
    }
    std::vector<const char*> output_names;
    for (const auto& name : m_impl->output_names) output_names.push_back(name.c_str());
    auto values = m_impl->session.Run(Ort::RunOptions{nullptr}, input_names.data(), input_values.data(),
                                      input_values.size(), output_names.data(), output_names.size());
    std::vector<Tensor> outputs;
    outputs.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      ONNXPROOF_TRY_ASSIGN(auto tensor, from_ort_value(m_impl->output_names[i], values[i]));
      outputs.push_back(std::move(tensor));
    }
    return outputs;
  } catch (const Ort::Exception& error) {
    return fail(ErrorCode::runtime, std::string("ONNX Runtime failed to run the model: ") + error.what());
  }
}

std::string onnxruntime_version() {
  try {
    return Ort::GetVersionString();
  } catch (const Ort::Exception&) {
    return "unknown";
  }
}

std::vector<std::string> available_providers() {
  std::vector<std::string> names;
  try {
    for (const auto& name : Ort::GetAvailableProviders()) names.push_back(short_provider_name(name));
  } catch (const Ort::Exception&) {
  }
  return names;
}

Expected<std::filesystem::path> Session::end_profiling() {
  if (m_impl->options.profile_prefix.empty()) return std::filesystem::path{};
  try {
    Ort::AllocatorWithDefaultOptions allocator;
    auto path = m_impl->session.EndProfilingAllocated(allocator);
    return std::filesystem::path(path.get());
  } catch (const Ort::Exception& error) {
    return fail(ErrorCode::runtime, std::string("ONNX Runtime cannot end its profile: ") + error.what());
  }
}

Expected<std::vector<NodePlacement>> parse_profile_placements(std::string_view profile_json) {
  constexpr std::string_view k_suffix = "_kernel_time";
  const auto events = nlohmann::json::parse(profile_json, nullptr, false);
  if (events.is_discarded() || !events.is_array()) {
    return fail(ErrorCode::invalid_input, "an ONNX Runtime profile is a JSON array of trace events");
  }
  std::vector<NodePlacement> placements;
  std::set<std::string> seen;
  for (const auto& event : events) {
    if (!event.is_object() || event.value("cat", "") != "Node" || !event.contains("args")) continue;
    const std::string name = event.value("name", "");
    const auto& args = event["args"];
    if (!name.ends_with(k_suffix) || !args.is_object() || !args.contains("provider")) continue;
    std::string node = name.substr(0, name.size() - k_suffix.size());
    if (!seen.insert(node).second) continue;
    placements.push_back({std::move(node), args.value("op_name", ""), short_provider_name(args.value("provider", ""))});
  }
  return placements;
}

Expected<std::vector<NodePlacement>> read_profile_placements(const std::filesystem::path& profile) {
  ONNXPROOF_TRY_ASSIGN(const std::string text, read_file(profile, uint64_t{1} << 30));
  auto placements = parse_profile_placements(text);
  if (!placements) return fail(ErrorCode::invalid_input, profile.string() + ": " + placements.error().message());
  return placements;
}

std::vector<NodePlacement> nodes_off_provider(const std::vector<NodePlacement>& placements, const std::string& provider) {
  std::vector<NodePlacement> off;
  for (const auto& placement : placements) {
    if (placement.provider != provider) off.push_back(placement);
  }
  return off;
}

}  // namespace onnxproof
