#include "onnxproof/export/export_step.h"

#include "child_process.h"
#include "contract.h"
#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/run_folder.h"

namespace onnxproof {
namespace fs = std::filesystem;

Expected<ExportResult> run_export(const ExportOptions& options, std::ostream& progress) {
  if (!options.from_export.empty()) {
    ONNXPROOF_TRY(require_replaceable_run_folder(options.out));
    ONNXPROOF_TRY_ASSIGN(auto adopted, adopt_export(options));
    ONNXPROOF_TRY(write_run_marker(options.out, "onnxproof export --from-export", options.from_export.string()));
    return adopted;
  }
  ONNXPROOF_TRY(validate_export_options(options));
  ONNXPROOF_TRY(validate_model_file(options.model));
  if (options.exporter == "both")
    return fail(ErrorCode::usage, "--exporter both proves each exporter's model: it is for onnxproof pipeline");
  ONNXPROOF_TRY(require_replaceable_run_folder(options.out));  // never into a project folder
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  // Marked as a run folder before anything else is written: a later run may replace it.
  ONNXPROOF_TRY(write_run_marker(options.out, "onnxproof export", options.model));
  // A stale manifest must never pass for this run's result.
  fs::remove(options.out / "export.json", ec);

  const std::string framework = source_framework_of_spec(options.model);
  const std::string python = front_end_interpreter(options.python, framework);
  // Everything the front end prints (its stdout and stderr: progress, the exporter's and torch's
  // chatter) is kept in OUT/export.log; progress lines are forwarded, and its final
  // "onnxproof: error:" line becomes this function's Error (printed once, by the caller).
  std::string error_line;
  std::string log;
  const auto finished = run_front_end(
      python, framework, {"-m", "onnxproof", "--config-json", config_json(options).dump()}, k_both_streams,
      [&](const std::string& line) {
        log += line + '\n';
        if (line.starts_with(k_front_end_error_prefix))
          error_line = line.substr(k_front_end_error_prefix.size());
        else if (line.starts_with(k_front_end_progress_prefix))
          progress << line << '\n' << std::flush;
      },
      options.timeout_seconds);
  ONNXPROOF_TRY(write_file_atomically(options.out / "export.log", log));
  ONNXPROOF_TRY_ASSIGN(const int code, finished);
  if (code == 0 || code == 1) {
    if (!fs::exists(options.out / "export.json")) {
      return fail(ErrorCode::internal, "the export front end (" + python + ") ended without writing " +
                                           (options.out / "export.json").string());
    }
    return read_export_manifest(options.out);
  }
  // The front end's exit codes (python/onnxproof/core/errors.py): 2 usage, 3 could not run, 4 a write failed.
  if (!error_line.empty())
    return fail(code == 2 ? ErrorCode::usage : code == 4 ? ErrorCode::io : ErrorCode::invalid_input, error_line);
  return fail(ErrorCode::internal, "the export front end (" + python + " -m onnxproof) failed with exit code " +
                                       std::to_string(code) + "; its output is in " +
                                       (options.out / "export.log").string());
}

}  // namespace onnxproof
