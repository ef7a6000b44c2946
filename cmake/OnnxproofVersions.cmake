# The front end's default interpreter: the pinned environment scripts/setup.sh makes in .venv/.
# Versions of torch and Python are asked from the interpreter actually used, at run time, never
# baked in here (a user may pass --python or set $ONNXPROOF_PYTHON).
set(ONNXPROOF_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Default Python interpreter for the front end (torch, onnx)")
if(IS_ABSOLUTE "${ONNXPROOF_PYTHON}" AND NOT EXISTS "${ONNXPROOF_PYTHON}")
  message(WARNING "onnxproof: ${ONNXPROOF_PYTHON} does not exist; run scripts/setup.sh to make the pinned environment")
endif()
# TensorFlow models export in an environment of their own (.venv-tf/: tensorflow-cpu, keras, tf2onnx),
# which never shares packages with the PyTorch one; $ONNXPROOF_TF_PYTHON or --python overrides it.
# Optional: a checkout without it proves PyTorch models only, so no warning when it is missing.
set(ONNXPROOF_TF_PYTHON "${PROJECT_SOURCE_DIR}/.venv-tf/bin/python" CACHE FILEPATH
    "Default Python interpreter for TensorFlow models (tensorflow, keras, tf2onnx)")
message(STATUS "onnxproof: ONNX ${ONNX_VERSION}, protobuf ${Protobuf_VERSION}, front end ${ONNXPROOF_PYTHON}")
