#pragma once
// OpenVINO's C API, bound by hand to the library loaded at run time (dlopen of libopenvino_c.so.*
// from the folder Installation::openvino_dir names): the engine builds without OpenVINO and runs
// where it is absent; `--provider openvino` then says why in one line. The types below are the
// subset of openvino/c/*.h (2024.0 and later) the engine calls, declared here so that no
// OpenVINO header is needed to build. docs/providers.md, "OpenVINO".

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "onnxproof/core/error.h"

namespace onnxproof::runtime_detail {

struct ov_core;
struct ov_model;
struct ov_compiled_model;
struct ov_infer_request;
struct ov_tensor;
struct ov_output_const_port;

using ov_status = int;  // ov_status_e: 0 is OK

struct ov_shape {
  int64_t rank;
  int64_t* dims;
};

struct ov_dimension {
  int64_t min;
  int64_t max;  // -1: unbounded (a dynamic dimension)
};

struct ov_partial_shape {
  ov_dimension rank;
  ov_dimension* dims;
};

struct ov_version {
  const char* build_number;
  const char* description;
};

/// The functions the engine calls, each looked up by its exported name.
struct OpenvinoApi {
  ov_status (*get_openvino_version)(ov_version*);
  void (*version_free)(ov_version*);
  const char* (*get_last_err_msg)();
  void (*free_string)(const char*);  // ov_free
  ov_status (*core_create)(ov_core**);
  void (*core_free)(ov_core*);
  ov_status (*core_read_model)(const ov_core*, const char*, const char*, ov_model**);
  ov_status (*core_read_model_from_memory_buffer)(const ov_core*, const char*, size_t, const ov_tensor*, ov_model**);
  void (*model_free)(ov_model*);
  // Variadic: (core, model, device, property count, out, key, value, ...): the one form every
  // release since 2022.1 has (ov_core_compile_model_props came with 2025.x).
  ov_status (*core_compile_model)(const ov_core*, const ov_model*, const char*, size_t, ov_compiled_model**, ...);
  void (*compiled_model_free)(ov_compiled_model*);
  ov_status (*compiled_model_get_property)(const ov_compiled_model*, const char*, char**);
  ov_status (*compiled_model_inputs_size)(const ov_compiled_model*, size_t*);
  ov_status (*compiled_model_outputs_size)(const ov_compiled_model*, size_t*);
  ov_status (*compiled_model_input_by_index)(const ov_compiled_model*, size_t, ov_output_const_port**);
  ov_status (*compiled_model_output_by_index)(const ov_compiled_model*, size_t, ov_output_const_port**);
  ov_status (*compiled_model_create_infer_request)(const ov_compiled_model*, ov_infer_request**);
  ov_status (*port_get_any_name)(const ov_output_const_port*, char**);
  ov_status (*port_get_partial_shape)(const ov_output_const_port*, ov_partial_shape*);
  ov_status (*port_get_element_type)(const ov_output_const_port*, int*);
  void (*output_const_port_free)(ov_output_const_port*);
  void (*partial_shape_free)(ov_partial_shape*);
  ov_status (*infer_request_set_input_tensor_by_index)(ov_infer_request*, size_t, const ov_tensor*);
  ov_status (*infer_request_get_output_tensor_by_index)(const ov_infer_request*, size_t, ov_tensor**);
  ov_status (*infer_request_infer)(ov_infer_request*);
  void (*infer_request_free)(ov_infer_request*);
  ov_status (*shape_create)(int64_t, const int64_t*, ov_shape*);
  ov_status (*shape_free)(ov_shape*);
  ov_status (*tensor_create_from_host_ptr)(int, ov_shape, void*, ov_tensor**);
  ov_status (*tensor_create)(int, ov_shape, ov_tensor**);
  ov_status (*tensor_get_shape)(const ov_tensor*, ov_shape*);
  ov_status (*tensor_get_element_type)(const ov_tensor*, int*);
  ov_status (*tensor_get_byte_size)(const ov_tensor*, size_t*);
  ov_status (*tensor_data)(const ov_tensor*, void**);
  void (*tensor_free)(ov_tensor*);
};

/// The bound API and the release it came from.
struct OpenvinoLibrary {
  const OpenvinoApi* api = nullptr;
  std::string version;            // "2026.4.1-22982-..." (ov_get_openvino_version's build number)
  std::filesystem::path library;  // the libopenvino_c.so.* loaded
  int element_type_offset = 0;    // 1 for releases whose ov_element_type_e starts with UNDEFINED
};

/// Loads libopenvino_c.so.* from `folder` (once per process; later calls return the first
/// outcome) and binds the functions above. ErrorCode::not_found, saying how to install it, when
/// the folder holds no such library or the loader refuses it; ErrorCode::runtime when a function
/// is missing (a release older than 2024.0).
Expected<OpenvinoLibrary> bind_openvino_api(const std::filesystem::path& folder);

/// The message of OpenVINO's last failure in this thread, made one line.
std::string openvino_last_error(const OpenvinoApi& api);

}  // namespace onnxproof::runtime_detail
