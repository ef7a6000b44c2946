#include "onnxproof/export/float16.h"

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view k_kept_prefix = "onnxproof float16: kept in float32: ";
}  // namespace

Expected<Float16Conversion> convert_to_float16(const fs::path& model, const fs::path& out, const std::string& python,
                                               double timeout_seconds) {
  const nlohmann::json request = {{"model", model.string()}, {"out", out.string()}};
  std::string error_line;
  std::string log;
  Float16Conversion conversion{out, ""};
  // The conversion is the neutral core's (onnx, ONNX Runtime's converter), whatever framework
  // exported the model: the default environment has them.
  const auto finished = run_front_end(
      front_end_interpreter(python, k_torch), k_torch, {"-m", "onnxproof", "--float16-json", request.dump()},
      k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_front_end_error_prefix)) error_line = line.substr(k_front_end_error_prefix.size());
        if (line.starts_with(k_kept_prefix)) conversion.kept_in_float32 = line.substr(k_kept_prefix.size());
      },
      timeout_seconds);
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  std::error_code ec;
  if (code == 0 && fs::is_regular_file(out, ec)) return conversion;
  return fail(ErrorCode::invalid_input,
              "the float16 conversion of " + model.string() + " failed: " +
                  (error_line.empty() ? "exit code " + std::to_string(code) + "; it printed: " + log : error_line));
}

}  // namespace onnxproof
