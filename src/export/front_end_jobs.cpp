// The neutral core's jobs on a model file, each `python -m onnxproof FLAG REQUEST`: the float16
// conversion of --precision fp16 and the quantization of --quantize static.
#include "onnxproof/export/float16.h"
#include "onnxproof/export/quantize_static.h"

#include <functional>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/export/export_step.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view k_kept_prefix = "onnxproof float16: kept in float32: ";

// One job of the neutral core on a model file (onnx and ONNX Runtime's Python tools, whatever
// framework exported the model: the default environment has them): `python -m onnxproof FLAG
// REQUEST`, every line logged and handed to `on_line`; done when it exits 0 having written `out`.
Expected<void> run_model_job(std::string_view flag, const nlohmann::json& request, const std::string& python,
                             double timeout_seconds, const std::string& what, const fs::path& out,
                             const std::function<void(const std::string&)>& on_line) {
  std::string error_line;
  std::string log;
  const auto finished = run_front_end(
      front_end_interpreter(python, k_torch), k_torch, {"-m", "onnxproof", std::string(flag), request.dump()},
      k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_front_end_error_prefix)) error_line = line.substr(k_front_end_error_prefix.size());
        on_line(line);
      },
      timeout_seconds);
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  std::error_code ec;
  if (code == 0 && fs::is_regular_file(out, ec)) return {};
  return fail(ErrorCode::invalid_input,
              what + " failed: " +
                  (error_line.empty() ? "exit code " + std::to_string(code) + "; it printed: " + log : error_line));
}

}  // namespace

Expected<Float16Conversion> convert_to_float16(const fs::path& model, const fs::path& out, const std::string& python,
                                               double timeout_seconds, const std::vector<std::string>& keep_float32) {
  Float16Conversion conversion{out, ""};
  const nlohmann::json request = {{"model", model.string()}, {"out", out.string()}, {"keep_float32", keep_float32}};
  ONNXPROOF_TRY(run_model_job("--float16-json", request, python, timeout_seconds,
                              "the float16 conversion of " + model.string(), out, [&](const std::string& line) {
                                if (line.starts_with(k_kept_prefix))
                                  conversion.kept_in_float32 = line.substr(k_kept_prefix.size());
                              }));
  return conversion;
}

Expected<StaticQuantization> quantize_static(const fs::path& model, const fs::path& out, const fs::path& reference,
                                             const fs::path& reference_out, const std::string& python,
                                             double timeout_seconds) {
  const nlohmann::json request = {{"model", model.string()},
                                  {"out", out.string()},
                                  {"reference", reference.string()},
                                  {"quant_reference", reference_out.string()}};
  ONNXPROOF_TRY(run_model_job("--quantize-json", request, python, timeout_seconds,
                              "--quantize static of " + model.string(), out, [](const std::string&) {}));
  return StaticQuantization{out, reference_out};
}

}  // namespace onnxproof
