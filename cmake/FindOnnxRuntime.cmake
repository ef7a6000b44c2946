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

get_filename_component(OnnxRuntime_LIBRARY_DIR "${OnnxRuntime_LIBRARY}" DIRECTORY)

# The engine loads whichever ONNX Runtime release it is pointed at (ONNXPROOF_ONNXRUNTIME, a proof
# per runtime version). Each release versions the one symbol the engine imports
# (OrtGetApiBase@VERS_1.30.0), and a binary linked against one release requires that version
# node from every other: the loader refuses them all. So the engine links against a stub whose
# soname is libonnxruntime.so.1 and whose OrtGetApiBase carries no version, which any release
# satisfies; the stub's own file is named otherwise, so it is never the library loaded.
set(onnxruntime_stub_dir "${CMAKE_BINARY_DIR}/onnxruntime-link-stub")
file(WRITE "${onnxruntime_stub_dir}/stub.cpp"
     "// Link-time stand-in for libonnxruntime.so.1 (cmake/FindOnnxRuntime.cmake).\n"
     "extern \"C\" const void* OrtGetApiBase() { return nullptr; }\n")
add_library(onnxruntime_link_stub SHARED "${onnxruntime_stub_dir}/stub.cpp")
set_target_properties(onnxruntime_link_stub PROPERTIES
  OUTPUT_NAME onnxruntime-link-stub LIBRARY_OUTPUT_DIRECTORY "${onnxruntime_stub_dir}" NO_SONAME TRUE)
target_link_options(onnxruntime_link_stub PRIVATE "LINKER:-soname,libonnxruntime.so.1")

add_library(OnnxRuntime::OnnxRuntime INTERFACE IMPORTED)
set_target_properties(OnnxRuntime::OnnxRuntime PROPERTIES
  INTERFACE_LINK_LIBRARIES onnxruntime_link_stub
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}")
# Built binaries find the real library here (installed ones: INSTALL_RPATH, tools/onnxproof).
list(APPEND CMAKE_BUILD_RPATH "${OnnxRuntime_LIBRARY_DIR}")
set(OnnxRuntime_FOUND TRUE)
message(STATUS "ONNX Runtime: ${OnnxRuntime_LIBRARY} (${OnnxRuntime_VERSION_STAMP})")
