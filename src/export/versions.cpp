// The front end's interpreter and the versions it actually uses.
#include <unistd.h>

#include "child_process.h"
#include "onnxproof/core/installation.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"

namespace onnxproof {

std::string front_end_interpreter(const std::string& requested, std::string_view framework) {
  if (!requested.empty()) return requested;
  // TensorFlow brings its own protobuf and numpy: its environment is never the PyTorch one.
  return framework == k_tensorflow ? installation().tf_python : installation().python;
}

Error exec_front_end_module(const std::string& module, std::vector<std::string> args) {
  args.insert(args.begin(), {"-m", module});
  return exec_front_end(front_end_interpreter("", k_torch), std::move(args));
}

Expected<std::vector<std::pair<std::string, std::string>>> front_end_versions(std::string_view framework) {
  const std::string python = front_end_interpreter("", framework);
  std::vector<std::pair<std::string, std::string>> versions;
  ONNXPROOF_TRY_ASSIGN(const int code,
                       run_front_end(
                           python, framework, {"-m", "onnxproof.core.versions", std::string(framework)}, STDOUT_FILENO,
                           [&](const std::string& line) {
                             const auto space = line.find(' ');
                             if (space == std::string::npos) return;
                             versions.emplace_back(line.substr(0, space), line.substr(space + 1));
                           },
                           /*timeout_seconds=*/60));
  if (code != 0 || versions.empty()) {
    return fail(ErrorCode::not_found, "the front end's interpreter " + python +
                                          " cannot report its versions (exit code " + std::to_string(code) + ")");
  }
  return versions;
}

}  // namespace onnxproof
