// The front end's half of divergence localization: capturing module outputs.
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/export/export_step.h"

namespace onnxproof {
namespace fs = std::filesystem;

Expected<void> capture_module_outputs(const fs::path& run, const std::string& model_file, const std::string& data_set,
                                      const std::string& framework, const std::string& python, double timeout_seconds) {
  const nlohmann::json request = {{"run", run.string()}, {"model", model_file}, {"case", data_set}};
  std::error_code ec;
  fs::create_directories(run / "localize", ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + (run / "localize").string() + ": " + ec.message());
  std::string error_line;
  std::string log;
  // The model is loaded again by the framework that exported it, in that framework's environment.
  const std::string interpreter = front_end_interpreter(python, framework);
  const auto finished = run_front_end(
      interpreter, framework, {"-m", "onnxproof", "--localize-json", request.dump()}, k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_front_end_error_prefix)) error_line = line.substr(k_front_end_error_prefix.size());
      },
      timeout_seconds);
  ONNXPROOF_TRY(write_file_atomically(run / "localize" / "capture.log", log));
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  if (code == 0) return {};
  return fail(ErrorCode::invalid_input,
              error_line.empty() ? "the front end could not capture the module outputs (exit code " +
                                       std::to_string(code) + "); see " + (run / "localize" / "capture.log").string()
                                 : error_line);
}

}  // namespace onnxproof
