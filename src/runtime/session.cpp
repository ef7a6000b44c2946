#include "onnxproof/runtime/session.h"

#include <onnx/onnx_pb.h>
#include "ort_api.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <map>
#include <utility>

#include "onnxproof/core/name_table.h"
#include "onnxproof/core/ownership.h"
#include "openvino_session.h"
#include "session_providers.h"

namespace onnxproof {
using runtime_detail::append_provider;
using runtime_detail::provider_error;

namespace {

// One environment per process, as ONNX Runtime requires; created on first use. Its own log is
// kept to fatal messages: every failure reaches the user once, as an Error.
Expected<Ort::Env*> shared_env() {
  static std::unique_ptr<Ort::Env> env;
  static std::string failure;
  if (!env && failure.empty()) {
    if (auto bound = runtime_detail::bind_onnxruntime_api(); !bound) return std::unexpected(bound.error());
    // A malformed session-config is the deployment's mistake, said once here: not a model that
    // fails to load (each session would otherwise report it as the model refused).
    if (auto config = runtime_detail::deployment_session_config(); !config) return std::unexpected(config.error());
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

// When a model's session fails, whether the deployment's session-config is to blame: a session of
// the smallest model with those options alone fails too. Said as the deployment's mistake (exit 3),
// not as the model refused by the release.
std::optional<Error> deployment_options_rejected(Ort::Env& env) {
  const auto deployment = runtime_detail::deployment_session_config();
  if (!deployment || deployment->empty()) return std::nullopt;
  const std::string bytes = identity_model(7, 3);
  try {
    Ort::SessionOptions options;
    for (const auto& [key, value] : *deployment) options.AddConfigEntry(key.c_str(), value.c_str());
    Ort::Session session(env, bytes.data(), bytes.size(), options);
    return std::nullopt;
  } catch (const Ort::Exception& error) {
    return Error(ErrorCode::invalid_input,
                 "the session-config beside this ONNX Runtime holds options it rejects: " + std::string(error.what()));
  }
}

}  // namespace

std::string_view optimization_name(GraphOptimization level) { return name_in(k_level_names, level); }

std::optional<GraphOptimization> parse_optimization(std::string_view name) { return parse_in(k_level_names, name); }

struct Session::Impl {
  Ort::Session session{nullptr};
  std::unique_ptr<runtime_detail::OpenvinoModel> openvino;  // set for the providers OpenVINO runs
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
std::string Session::precision() const { return m_impl->openvino ? m_impl->openvino->precision() : ""; }

SessionOptions lean_for_large_model(const std::filesystem::path& model, SessionOptions options) {
  constexpr std::uintmax_t k_large_bytes = std::uintmax_t{256} << 20;
  std::uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& file : {model, std::filesystem::path(model.string() + ".data")}) {
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec) bytes += size;
  }
  if (bytes > k_large_bytes) {
    options.prepacking = false;
    options.cpu_arena = false;
  }
  return options;
}

Expected<Session> Session::open(const std::filesystem::path& model, const SessionOptions& options) {
  ONNXPROOF_TRY(require_regular_file(model));  // ONNX Runtime opens it itself, FIFO or not
  return open_from(&model, {}, model.string(), options);
}

Expected<Session> Session::open_bytes(std::string_view model, const SessionOptions& options) {
  return open_from(nullptr, model, "the model in memory", options);
}

Expected<Session> Session::open_from(const std::filesystem::path* path, std::string_view bytes, const std::string& what,
                                     const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (is_openvino_provider(options.provider)) {
    // Impl's empty Ort::Session releases itself through the bound API, bound or not.
    ONNXPROOF_TRY(runtime_detail::bind_onnxruntime_api());
    ONNXPROOF_TRY_ASSIGN(impl->openvino, path ? runtime_detail::OpenvinoModel::open(*path, options)
                                              : runtime_detail::OpenvinoModel::open_bytes(bytes, options));
    impl->inputs = impl->openvino->inputs();
    impl->outputs = impl->openvino->outputs();
    return Session(std::move(impl));
  }
  ONNXPROOF_TRY_ASSIGN(Ort::Env * env, shared_env());
  try {
    Ort::SessionOptions session_options;
    session_options.SetGraphOptimizationLevel(ort_level(options.optimization));
    session_options.SetIntraOpNumThreads(options.intra_op_threads);
    session_options.SetInterOpNumThreads(1);
    // The deployment's own options first (a session-config beside the library: a proof per runtime
    // release proves what the application embedding it runs); onnxproof's below.
    ONNXPROOF_TRY_ASSIGN(const auto deployment, runtime_detail::deployment_session_config());
    for (const auto& [key, value] : deployment) session_options.AddConfigEntry(key.c_str(), value.c_str());
    if (options.forbid_cpu_fallback) session_options.AddConfigEntry("session.disable_cpu_ep_fallback", "1");
    if (!options.prepacking) session_options.AddConfigEntry("session.disable_prepacking", "1");
    if (!options.cpu_arena) session_options.DisableCpuMemArena();
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
      return std::unexpected(provider_error(options.provider, error.what(), ErrorCode::runtime,
                                            "ONNX Runtime cannot load " + what + ": "));
    }
    if (auto blamed = deployment_options_rejected(*env)) return std::unexpected(*blamed);
    return fail(ErrorCode::runtime, "ONNX Runtime cannot load " + what + ": " + error.what());
  }
  return Session(std::move(impl));
}

namespace {

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
    // 7: the oldest opset ONNX Runtime supports; IR version 10 knows every opset up to 21+ (a
    // release that reads less, 1.17 and older, is asked with the newest it reads).
    const int ir_version = std::min(10, onnxruntime_newest_ir_version());
    return env ? last_accepted(7, 64, [&](int opset) { return accepts(**env, opset, ir_version); }) : 0;
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
  if (m_impl->openvino) return m_impl->openvino->run(feeds);
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

Expected<void> start_onnxruntime() {
  ONNXPROOF_TRY(shared_env());
  return {};
}

std::string onnxruntime_version() {
  const OrtApiBase* base = OrtGetApiBase();  // needs no bound API: it answers for any release
  return base != nullptr && base->GetVersionString() != nullptr ? base->GetVersionString() : "unknown";
}

Expected<std::filesystem::path> Session::end_profiling() {
  // OpenVINO's sessions keep no ONNX Runtime profile (its plugin places every node on the CPU).
  if (m_impl->options.profile_prefix.empty() || m_impl->openvino) return std::filesystem::path{};
  try {
    Ort::AllocatorWithDefaultOptions allocator;
    auto path = m_impl->session.EndProfilingAllocated(allocator);
    return std::filesystem::path(path.get());
  } catch (const Ort::Exception& error) {
    return fail(ErrorCode::runtime, std::string("ONNX Runtime cannot end its profile: ") + error.what());
  }
}

}  // namespace onnxproof
