#include "onnxproof/export/export_step.h"

#include "child_process.h"
#include "contract.h"
#include "onnxproof/core/atomic_file.h"

namespace onnxproof {
namespace fs = std::filesystem;

Expected<void> require_replaceable_run_folder(const fs::path& out) {
  std::error_code ec;
  const auto status = fs::symlink_status(out, ec);
  if (!fs::exists(status)) return {};
  if (!fs::is_directory(status))
    return fail(ErrorCode::usage, "--out " + out.string() + " is not a folder; onnxproof writes a run folder there");
  const bool empty = fs::is_empty(out, ec);
  // An earlier run, or a folder seeded with a golden set to verify against.
  // export.log: a run whose export stopped before it wrote export.json.
  if (empty || fs::exists(out / "report.json") || fs::exists(out / "export.json") || fs::exists(out / "export.log") ||
      fs::exists(out / "golden" / "manifest.json"))
    return {};
  return fail(ErrorCode::usage, "refusing to replace " + out.string() +
                                    ": it is not an onnxproof run folder (no report.json, export.json, export.log "
                                    "or golden/manifest.json); give an empty or new folder with --out");
}

Expected<ExportResult> run_export(const ExportOptions& options, std::ostream& progress) {
  if (!options.from_export.empty()) {
    ONNXPROOF_TRY(require_replaceable_run_folder(options.out));
    return adopt_export(options);
  }
  ONNXPROOF_TRY(validate_export_options(options));
  if (options.exporter == "both")
    return fail(ErrorCode::usage, "--exporter both proves each exporter's model: it is for onnxproof pipeline");
  ONNXPROOF_TRY(require_replaceable_run_folder(options.out));  // never into a project folder
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  // A stale manifest must never pass for this run's result.
  fs::remove(options.out / "export.json", ec);

  const std::string python = front_end_interpreter(options.python);
  // Everything the front end prints (its stdout and stderr: progress, the exporter's and torch's
  // chatter) is kept in OUT/export.log; progress lines are forwarded, and its final
  // "onnxproof: error:" line becomes this function's Error (printed once, by the caller).
  std::string error_line;
  std::string log;
  const auto finished = run_front_end(
      python, {"-m", "onnxproof", "--config-json", config_json(options).dump()}, k_both_streams,
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
  // The front end's exit codes (python/onnxproof/errors.py): 2 usage, 3 could not run, 4 a write failed.
  if (!error_line.empty())
    return fail(code == 2 ? ErrorCode::usage : code == 4 ? ErrorCode::io : ErrorCode::invalid_input, error_line);
  return fail(ErrorCode::internal, "the export front end (" + python + " -m onnxproof) failed with exit code " +
                                       std::to_string(code) + "; its output is in " +
                                       (options.out / "export.log").string());
}

}  // namespace onnxproof
