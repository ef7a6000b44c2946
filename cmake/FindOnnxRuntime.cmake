# Finds ONNX Runtime's C/C++ API through one variable, ONNXRUNTIME_ROOT (a folder with include/
# and lib/). The default is the copy scripts/fetch-onnxruntime.sh installs into .deps/.
# Defines the imported target OnnxRuntime::OnnxRuntime.
set(ONNXRUNTIME_ROOT "${CMAKE_SOURCE_DIR}/.deps/onnxruntime" CACHE PATH
    "ONNX Runtime install folder (include/onnxruntime_cxx_api.h, lib/libonnxruntime.so)")

find_path(OnnxRuntime_INCLUDE_DIR onnxruntime_cxx_api.h
          PATHS "${ONNXRUNTIME_ROOT}/include" "${ONNXRUNTIME_ROOT}/include/onnxruntime"
          NO_DEFAULT_PATH)
find_library(OnnxRuntime_LIBRARY NAMES onnxruntime libonnxruntime.so.1
             PATHS "${ONNXRUNTIME_ROOT}/lib" NO_DEFAULT_PATH)

if(NOT OnnxRuntime_INCLUDE_DIR OR NOT OnnxRuntime_LIBRARY)
  message(FATAL_ERROR
    "ONNX Runtime not found under ONNXRUNTIME_ROOT='${ONNXRUNTIME_ROOT}'. "
    "Run scripts/setup.sh (or make setup) to install it there, or configure with "
    "-DONNXRUNTIME_ROOT=/path/to/onnxruntime (a folder with include/ and lib/).")
endif()

set(OnnxRuntime_VERSION_STAMP "unknown")
if(EXISTS "${ONNXRUNTIME_ROOT}/VERSIONS")
  file(READ "${ONNXRUNTIME_ROOT}/VERSIONS" OnnxRuntime_VERSION_STAMP)
  string(STRIP "${OnnxRuntime_VERSION_STAMP}" OnnxRuntime_VERSION_STAMP)
endif()

add_library(OnnxRuntime::OnnxRuntime SHARED IMPORTED)
set_target_properties(OnnxRuntime::OnnxRuntime PROPERTIES
  IMPORTED_LOCATION "${OnnxRuntime_LIBRARY}"
  IMPORTED_NO_SONAME FALSE
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}")
get_filename_component(OnnxRuntime_LIBRARY_DIR "${OnnxRuntime_LIBRARY}" DIRECTORY)
set(OnnxRuntime_FOUND TRUE)
message(STATUS "ONNX Runtime: ${OnnxRuntime_LIBRARY} (${OnnxRuntime_VERSION_STAMP})")
