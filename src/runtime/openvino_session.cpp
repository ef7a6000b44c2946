// A model compiled by OpenVINO's CPU plugin (openvino_session.h).
#include "openvino_session.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "onnxproof/core/installation.h"
#include "onnxproof/model/model_io.h"
#include "openvino_api.h"

namespace onnxproof::runtime_detail {
namespace fs = std::filesystem;

namespace {

// ov_element_type_e in the numbering of 2025.4 and later (DYNAMIC = 0); older releases add 1
// (OpenvinoLibrary::element_type_offset).
constexpr std::pair<DType, int> k_element_types[] = {
    {DType::boolean, 1}, {DType::bfloat16, 2}, {DType::float16, 3}, {DType::float32, 4},       {DType::float64, 5},
    {DType::int8, 7},    {DType::int16, 8},    {DType::int32, 9},   {DType::int64, 10},        {DType::uint8, 16},
    {DType::uint16, 17}, {DType::uint32, 18},  {DType::uint64, 19}, {DType::float8e4m3fn, 21}, {DType::float8e5m2, 22},
};  // 6 is I4, 11-15 U1, U2, U3, U4, U6, 20 NF4: types ONNX tensors here do not take

std::optional<int> element_type(DType dtype, int offset) {
  for (const auto& [d, type] : k_element_types)
    if (d == dtype) return type + offset;
  return std::nullopt;
}

std::optional<DType> dtype_of(int type, int offset) {
  for (const auto& [d, t] : k_element_types)
    if (t + offset == type) return d;
  return std::nullopt;
}

Expected<OpenvinoLibrary> bound_library() { return bind_openvino_api(installation().openvino_dir); }

// The graph's inputs (initializers aside, as runtimes treat them) and outputs, as declared.
SessionValue declared_value(const onnx::ValueInfoProto& info) {
  SessionValue value;
  value.name = info.name();
  if (!info.type().has_tensor_type()) {
    value.is_tensor = false;
    value.type = info.type().has_sequence_type() ? "sequence" : info.type().has_map_type() ? "map" : "optional";
    return value;
  }
  const auto& tensor = info.type().tensor_type();
  value.dtype = dtype_from_onnx(tensor.elem_type()).value_or(DType::undefined);
  value.type = dtype_name(value.dtype);
  for (const auto& dim : tensor.shape().dim()) {
    value.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    value.symbols.push_back(dim.has_dim_param() ? dim.dim_param() : "");
  }
  return value;
}

}  // namespace

struct OpenvinoModel::Handles {
  const OpenvinoApi* api = nullptr;
  int offset = 0;
  ov_core* core = nullptr;
  ov_model* model = nullptr;
  ov_compiled_model* compiled = nullptr;
  ov_infer_request* request = nullptr;
  ~Handles() {
    if (!api) return;
    if (request) api->infer_request_free(request);
    if (compiled) api->compiled_model_free(compiled);
    if (model) api->model_free(model);
    if (core) api->core_free(core);
  }
};

OpenvinoModel::~OpenvinoModel() = default;

Expected<std::unique_ptr<OpenvinoModel>> OpenvinoModel::open(const fs::path& path, const SessionOptions& options) {
  ONNXPROOF_TRY(bound_library());  // said before the model is read: OpenVINO may not be installed
  // onnxproof's loader first: OpenVINO's ONNX frontend would follow an external data location out
  // of the model's folder; the declared names and types come from the same read.
  ONNXPROOF_TRY_ASSIGN(const LoadedModel loaded, load_model(path));
  return compile(loaded.proto, &path, {}, path.string(), options);
}

Expected<std::unique_ptr<OpenvinoModel>> OpenvinoModel::open_bytes(std::string_view bytes,
                                                                   const SessionOptions& options) {
  ONNXPROOF_TRY(bound_library());
  ONNXPROOF_TRY_ASSIGN(const onnx::ModelProto proto, parse_model(bytes, "the model in memory"));
  return compile(proto, nullptr, bytes, "the model in memory", options);
}

Expected<std::unique_ptr<OpenvinoModel>> OpenvinoModel::compile(const onnx::ModelProto& proto, const fs::path* path,
                                                                std::string_view bytes, const std::string& what,
                                                                const SessionOptions& options) {
  ONNXPROOF_TRY_ASSIGN(const auto library, bound_library());
  std::unique_ptr<OpenvinoModel> result(new OpenvinoModel());
  std::set<std::string> initializers;
  for (const auto& initializer : proto.graph().initializer()) initializers.insert(initializer.name());
  for (const auto& input : proto.graph().input())
    if (!initializers.contains(input.name())) result->m_inputs.push_back(declared_value(input));
  for (const auto& output : proto.graph().output()) result->m_outputs.push_back(declared_value(output));

  const OpenvinoApi& api = *library.api;
  auto handles = std::make_unique<Handles>();
  handles->api = &api;
  handles->offset = library.element_type_offset;
  const auto refused = [&](const std::string& step) {
    return fail(ErrorCode::runtime,
                "OpenVINO " + library.version + " cannot " + step + " " + what + ": " + openvino_last_error(api));
  };
  if (api.core_create(&handles->core) != 0) return refused("start for");
  const ov_status read = path ? api.core_read_model(handles->core, path->c_str(), nullptr, &handles->model)
                              : api.core_read_model_from_memory_buffer(handles->core, bytes.data(), bytes.size(),
                                                                       nullptr, &handles->model);
  if (read != 0) return refused("read");
  const std::string threads = std::to_string(options.intra_op_threads);
  ov_status compiled = 0;
  if (options.provider == "openvino:default") {
    compiled = options.intra_op_threads > 0
                   ? api.core_compile_model(handles->core, handles->model, "CPU", 2, &handles->compiled,
                                            "INFERENCE_NUM_THREADS", threads.c_str())
                   : api.core_compile_model(handles->core, handles->model, "CPU", 0, &handles->compiled);
  } else {
    compiled = options.intra_op_threads > 0
                   ? api.core_compile_model(handles->core, handles->model, "CPU", 4, &handles->compiled,
                                            "INFERENCE_PRECISION_HINT", "f32", "INFERENCE_NUM_THREADS", threads.c_str())
                   : api.core_compile_model(handles->core, handles->model, "CPU", 2, &handles->compiled,
                                            "INFERENCE_PRECISION_HINT", "f32");
  }
  if (compiled != 0) return refused("compile");
  char* precision = nullptr;
  if (api.compiled_model_get_property(handles->compiled, "INFERENCE_PRECISION_HINT", &precision) == 0 && precision) {
    result->m_precision = precision;
    api.free_string(precision);
  }
  size_t inputs = 0, outputs = 0;
  api.compiled_model_inputs_size(handles->compiled, &inputs);
  api.compiled_model_outputs_size(handles->compiled, &outputs);
  if (inputs != result->m_inputs.size() || outputs != result->m_outputs.size()) {
    return fail(ErrorCode::runtime, "OpenVINO " + library.version + " compiled " + what + " with " +
                                        std::to_string(inputs) + " inputs and " + std::to_string(outputs) +
                                        " outputs, the graph declares " + std::to_string(result->m_inputs.size()) +
                                        " and " + std::to_string(result->m_outputs.size()));
  }
  if (api.compiled_model_create_infer_request(handles->compiled, &handles->request) != 0)
    return refused("make an inference request for");
  result->m_handles = std::move(handles);
  return result;
}

Expected<std::vector<Tensor>> OpenvinoModel::run(const std::vector<Feed>& feeds) {
  const OpenvinoApi& api = *m_handles->api;
  std::map<std::string, const Tensor*> by_name;
  for (const auto& feed : feeds) by_name[feed.name] = feed.tensor;
  // The tensors handed to the request live until the inference is done.
  std::vector<std::unique_ptr<ov_tensor, void (*)(ov_tensor*)>> held;
  for (std::size_t i = 0; i < m_inputs.size(); ++i) {
    const Tensor& tensor = *by_name.at(m_inputs[i].name);
    const auto type = element_type(tensor.dtype(), m_handles->offset);
    if (!type) {
      return fail(ErrorCode::unsupported, "input '" + m_inputs[i].name + "' is " + dtype_name(tensor.dtype()) +
                                              ", which OpenVINO cannot be fed");
    }
    // A scalar's shape is made by hand: the C API's ov_shape_create refuses rank 0.
    ov_shape shape{0, nullptr};
    const auto& dims = tensor.shape();
    if (!dims.empty() && api.shape_create(static_cast<int64_t>(dims.size()), dims.data(), &shape) != 0)
      return fail(ErrorCode::runtime, "OpenVINO: " + openvino_last_error(api));
    ov_tensor* value = nullptr;
    // OpenVINO does not write to input buffers; the cast only satisfies the C API's signature.
    // An empty tensor (a cache of past length 0) has no buffer to point at: OpenVINO makes its own.
    const ov_status made =
        tensor.bytes().empty()
            ? api.tensor_create(*type, shape, &value)
            : api.tensor_create_from_host_ptr(*type, shape, const_cast<std::byte*>(tensor.bytes().data()), &value);
    if (!dims.empty()) api.shape_free(&shape);
    if (made != 0)
      return fail(ErrorCode::runtime,
                  "OpenVINO cannot hold input '" + m_inputs[i].name + "': " + openvino_last_error(api));
    held.emplace_back(value, api.tensor_free);
    if (api.infer_request_set_input_tensor_by_index(m_handles->request, i, value) != 0)
      return fail(ErrorCode::runtime, "OpenVINO refused input '" + m_inputs[i].name + "': " + openvino_last_error(api));
  }
  if (api.infer_request_infer(m_handles->request) != 0)
    return fail(ErrorCode::runtime, "OpenVINO failed to run the model: " + openvino_last_error(api));
  std::vector<Tensor> results;
  for (std::size_t k = 0; k < m_outputs.size(); ++k) {
    ov_tensor* value = nullptr;
    if (api.infer_request_get_output_tensor_by_index(m_handles->request, k, &value) != 0)
      return fail(ErrorCode::runtime,
                  "OpenVINO gave no output '" + m_outputs[k].name + "': " + openvino_last_error(api));
    std::unique_ptr<ov_tensor, void (*)(ov_tensor*)> owned(value, api.tensor_free);
    int type = 0;
    ov_shape shape{};
    size_t bytes = 0;
    void* data = nullptr;
    // The C API gives no shape of rank 0 (a scalar: one element, said below), and an empty output
    // no data to point at.
    const bool shaped = api.tensor_get_shape(value, &shape) == 0;
    const auto free_shape = [&api](ov_shape* held) { api.shape_free(held); };
    const std::unique_ptr<ov_shape, decltype(free_shape)> shape_held(shaped ? &shape : nullptr, free_shape);
    if (api.tensor_get_element_type(value, &type) != 0 || api.tensor_get_byte_size(value, &bytes) != 0 ||
        (bytes > 0 && api.tensor_data(value, &data) != 0))
      return fail(ErrorCode::runtime, "OpenVINO's output '" + m_outputs[k].name + "': " + openvino_last_error(api));
    const auto dtype = dtype_of(type, m_handles->offset);
    if (!dtype) {
      return fail(ErrorCode::unsupported, "output '" + m_outputs[k].name + "' has OpenVINO element type " +
                                              std::to_string(type) + ", which onnxproof does not compare");
    }
    if (!shaped && bytes != static_cast<size_t>(dtype_storage_bytes(*dtype, 1)))
      return fail(ErrorCode::runtime, "OpenVINO gives no shape for output '" + m_outputs[k].name + "'");
    std::vector<int64_t> dims(shape.dims, shape.dims + (shaped ? shape.rank : 0));
    std::vector<std::byte> copy(bytes);
    if (bytes > 0) std::memcpy(copy.data(), data, bytes);
    ONNXPROOF_TRY_ASSIGN(auto tensor, Tensor::from_bytes(*dtype, std::move(dims), std::move(copy)));
    results.push_back(std::move(tensor));
  }
  return results;
}

}  // namespace onnxproof::runtime_detail

namespace onnxproof {

Expected<std::string> openvino_version() {
  ONNXPROOF_TRY_ASSIGN(const auto library, runtime_detail::bind_openvino_api(installation().openvino_dir));
  return library.version;
}

Expected<OpenvinoReading> read_with_openvino(const std::filesystem::path& model) {
  ONNXPROOF_TRY_ASSIGN(std::string version, openvino_version());
  OpenvinoReading reading{std::move(version), {}, {}};
  auto compiled = runtime_detail::OpenvinoModel::open(model, SessionOptions{.provider = "openvino"});
  if (compiled) return reading;
  if (compiled.error().code() != ErrorCode::runtime) return std::unexpected(compiled.error());
  reading.refusal = compiled.error().message();
  // The frontend's summary: "No conversion rule found for operations: NoSuchOp-17, Other-13".
  const std::string marker = "No conversion rule found for operations:";
  if (const auto at = reading.refusal.find(marker); at != std::string::npos) {
    std::string list = reading.refusal.substr(at + marker.size());
    // The summary's next line ("-- Conversion is failed for: ...") or its end.
    if (const auto end = std::min(list.find(" --"), list.find("  ")); end != std::string::npos) list.resize(end);
    std::size_t start = 0;
    while (start < list.size()) {
      const auto comma = list.find(',', start);
      std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!name.empty()) reading.unconverted.push_back(name);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return reading;
}

bool is_openvino_provider(std::string_view provider) {
  return provider == "openvino" || provider == "openvino:default" || provider == "openvino:f32";
}

}  // namespace onnxproof
