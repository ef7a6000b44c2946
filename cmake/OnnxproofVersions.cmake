# Records the versions of the tools onnxproof is built with, for `onnxproof --version` and reports.
# ONNX Runtime's own version is asked from the loaded library at run time instead.
set(ONNXPROOF_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python interpreter with torch and onnx")

execute_process(
  COMMAND "${ONNXPROOF_PYTHON}" -c "import torch; print(torch.__version__)"
  OUTPUT_VARIABLE ONNXPROOF_TORCH_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _torch_rc)
if(NOT _torch_rc EQUAL 0)
  set(ONNXPROOF_TORCH_VERSION "not found")
endif()
execute_process(
  COMMAND "${ONNXPROOF_PYTHON}" -c "import sys; print(sys.version.split()[0])"
  OUTPUT_VARIABLE ONNXPROOF_PYTHON_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _py_rc)
if(NOT _py_rc EQUAL 0)
  set(ONNXPROOF_PYTHON_VERSION "not found")
endif()
message(STATUS "onnxproof: ONNX ${ONNX_VERSION}, protobuf ${Protobuf_VERSION}, "
               "torch ${ONNXPROOF_TORCH_VERSION} (${ONNXPROOF_PYTHON})")
