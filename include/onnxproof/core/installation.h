#pragma once
// Where onnxproof's own files are: the data files (support tables, the finding-code registry),
// the Python front end and the examples, and the interpreter that runs exports. The driver
// resolves them once (environment overrides, else beside the installed executable, else the
// source tree this build came from) and hands them to the libraries with use_installation();
// installation.cpp is the one place the libraries' environment is read.

#include <filesystem>
#include <string>
#include <vector>

namespace onnxproof {

struct Installation {
  std::filesystem::path data_dir;      // op-support/*.csv, finding_codes.json
  std::filesystem::path python_dir;    // holds the onnxproof front-end package (PYTHONPATH)
  std::filesystem::path examples_dir;  // digits/digits_cnn.py for the demo
  std::string python;                  // the interpreter PyTorch models export with
  std::string tf_python;               // the interpreter TensorFlow models export with (.venv-tf)
  /// Where fetched ONNX Runtime releases live (--target ort-cpu@VERSION): $ONNXPROOF_ORT_CACHE,
  /// else $XDG_CACHE_HOME/onnxproof/onnxruntime, else ~/.cache/onnxproof/onnxruntime.
  std::filesystem::path runtime_release_cache;
  /// The folder holding OpenVINO's libopenvino_c.so (--provider openvino): $ONNXPROOF_OPENVINO,
  /// else the .deps/openvino/lib scripts/fetch-openvino.sh fills in the source tree.
  std::filesystem::path openvino_dir;
  /// The environment this process was started with (NAME=VALUE), which the children it starts
  /// (the front end, a release's driver) inherit with their own changes.
  std::vector<std::string> environment;
};

/// The environment's overrides (ONNXPROOF_DATA, ONNXPROOF_PYTHONPATH, ONNXPROOF_PYTHON,
/// ONNXPROOF_TF_PYTHON), else <prefix>/share/onnxproof/... when `executable` lies in <prefix>/bin
/// of an install, else the source tree and pinned .venv and .venv-tf this build was configured
/// with (an install keeps the configured interpreters).
Installation resolve_installation(const std::filesystem::path& executable);

/// Makes `installation` the one the libraries use; call once, at start-up.
void use_installation(Installation installation);

/// The installation in use: the one given to use_installation(), else the build's source tree
/// (for tests and programs that link the libraries directly).
const Installation& installation();

}  // namespace onnxproof
