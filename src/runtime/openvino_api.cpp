// OpenVINO's C API bound at run time (openvino_api.h).
#include "openvino_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <vector>

namespace onnxproof::runtime_detail {
namespace fs = std::filesystem;

namespace {

// libopenvino_c.so.2641 and the like: the release's number is in the file name, so the folder is
// searched rather than named. The highest name first, should a folder hold two.
std::optional<fs::path> find_c_library(const fs::path& folder) {
  std::error_code ec;
  std::vector<fs::path> found;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("libopenvino_c.so")) found.push_back(it->path());
  }
  if (found.empty()) return std::nullopt;
  return *std::max_element(found.begin(), found.end());
}

template <typename Function>
bool bind(void* handle, const char* name, Function& slot) {
  slot = reinterpret_cast<Function>(::dlsym(handle, name));
  return slot != nullptr;
}

Expected<void> bind_all(void* handle, OpenvinoApi& api) {
  std::string missing;
  auto need = [&](const char* name, auto& slot) {
    if (!bind(handle, name, slot)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need("ov_get_openvino_version", api.get_openvino_version);
  need("ov_version_free", api.version_free);
  need("ov_get_last_err_msg", api.get_last_err_msg);
  need("ov_free", api.free_string);
  need("ov_core_create", api.core_create);
  need("ov_core_free", api.core_free);
  need("ov_core_read_model", api.core_read_model);
  need("ov_core_read_model_from_memory_buffer", api.core_read_model_from_memory_buffer);
  need("ov_model_free", api.model_free);
  need("ov_core_compile_model", api.core_compile_model);
  need("ov_compiled_model_free", api.compiled_model_free);
  need("ov_compiled_model_get_property", api.compiled_model_get_property);
  need("ov_compiled_model_inputs_size", api.compiled_model_inputs_size);
  need("ov_compiled_model_outputs_size", api.compiled_model_outputs_size);
  need("ov_compiled_model_input_by_index", api.compiled_model_input_by_index);
  need("ov_compiled_model_output_by_index", api.compiled_model_output_by_index);
  need("ov_compiled_model_create_infer_request", api.compiled_model_create_infer_request);
  need("ov_port_get_any_name", api.port_get_any_name);
  need("ov_port_get_partial_shape", api.port_get_partial_shape);
  need("ov_port_get_element_type", api.port_get_element_type);
  need("ov_output_const_port_free", api.output_const_port_free);
  need("ov_partial_shape_free", api.partial_shape_free);
  need("ov_infer_request_set_input_tensor_by_index", api.infer_request_set_input_tensor_by_index);
  need("ov_infer_request_get_output_tensor_by_index", api.infer_request_get_output_tensor_by_index);
  need("ov_infer_request_infer", api.infer_request_infer);
  need("ov_infer_request_free", api.infer_request_free);
  need("ov_shape_create", api.shape_create);
  need("ov_shape_free", api.shape_free);
  need("ov_tensor_create_from_host_ptr", api.tensor_create_from_host_ptr);
  need("ov_tensor_create", api.tensor_create);
  need("ov_tensor_get_shape", api.tensor_get_shape);
  need("ov_tensor_get_element_type", api.tensor_get_element_type);
  need("ov_tensor_get_byte_size", api.tensor_get_byte_size);
  need("ov_tensor_data", api.tensor_data);
  need("ov_tensor_free", api.tensor_free);
  if (!missing.empty())
    return fail(ErrorCode::runtime, "this OpenVINO release lacks functions of the C API onnxproof calls (" + missing +
                                        "): releases from 2024.0 on are supported");
  return {};
}

// Releases up to 2025.0 number their element types from UNDEFINED = 0 (f32 is 5), later ones from
// DYNAMIC = 0 (f32 is 4). Asked of the library itself: a one-element tensor of type 4 is four
// bytes (f32) in the later numbering, two (f16) in the earlier.
Expected<int> element_type_offset(const OpenvinoApi& api) {
  float value = 0.0f;
  const int64_t one = 1;
  ov_shape shape{};
  if (api.shape_create(1, &one, &shape) != 0) return fail(ErrorCode::runtime, openvino_last_error(api));
  ov_tensor* tensor = nullptr;
  const ov_status status = api.tensor_create_from_host_ptr(4, shape, &value, &tensor);
  api.shape_free(&shape);
  if (status != 0) return fail(ErrorCode::runtime, openvino_last_error(api));
  size_t bytes = 0;
  api.tensor_get_byte_size(tensor, &bytes);
  api.tensor_free(tensor);
  return bytes == 4 ? 0 : 1;
}

}  // namespace

std::string openvino_last_error(const OpenvinoApi& api) {
  const char* message = api.get_last_err_msg ? api.get_last_err_msg() : nullptr;
  std::string text = message ? message : "no message";
  // OpenVINO's messages run over several lines ("Exception from src/...:\nCheck '...' failed");
  // the line a person reads is the last that says something.
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

Expected<OpenvinoLibrary> bind_openvino_api(const fs::path& folder) {
  static std::once_flag once;
  static Expected<OpenvinoLibrary> outcome = fail(ErrorCode::runtime, "not bound");
  std::call_once(once, [&] {
    const std::string install =
        "install it with `make setup` (scripts/fetch-openvino.sh) or point ONNXPROOF_OPENVINO at a folder holding "
        "libopenvino_c.so (an openvino wheel's openvino/libs)";
    const auto library = find_c_library(folder);
    if (!library) {
      outcome = fail(ErrorCode::not_found,
                     "OpenVINO is not installed: no libopenvino_c.so in " + folder.string() + "; " + install);
      return;
    }
    void* handle = ::dlopen(library->c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      outcome = fail(ErrorCode::not_found, "OpenVINO cannot be loaded from " + library->string() + ": " +
                                               (why ? why : "the loader refused it") + "; " + install);
      return;
    }
    static OpenvinoApi api{};
    if (auto bound = bind_all(handle, api); !bound) {
      outcome = std::unexpected(bound.error());
      return;
    }
    OpenvinoLibrary result{&api, "", *library, 0};
    ov_version version{};
    if (api.get_openvino_version(&version) == 0) {
      // "2026.4.1-22982-e213a147257-releases/2026/4": the release is the part before the build's.
      result.version = version.build_number ? version.build_number : "";
      result.version = result.version.substr(0, result.version.find('-'));
      api.version_free(&version);
    }
    auto offset = element_type_offset(api);
    if (!offset) {
      outcome = std::unexpected(offset.error());
      return;
    }
    result.element_type_offset = *offset;
    outcome = result;
  });
  return outcome;
}

}  // namespace onnxproof::runtime_detail
