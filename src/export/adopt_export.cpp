// Adopting a finished export (--from-export, prove()): copied into the run folder, never moved.
#include "onnxproof/core/sha256.h"
#include "onnxproof/export/export_step.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// Copies `from` into `to`: regular files and folders only (a link or device in an export folder
// is refused, not followed).
Expected<void> copy_export_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + to.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    const auto status = entry.symlink_status(ec);
    if (fs::is_directory(status)) {
      ONNXPROOF_TRY(copy_export_tree(entry.path(), to / entry.path().filename()));
    } else if (fs::is_regular_file(status)) {
      fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing, ec);
    } else {
      return fail(ErrorCode::invalid_input, entry.path().string() +
                                                " is not a regular file; an export folder holds "
                                                "only files and folders");
    }
    if (ec) return fail(ErrorCode::io, "cannot copy " + entry.path().string() + ": " + ec.message());
  }
  if (ec) return fail(ErrorCode::io, "cannot read " + from.string() + ": " + ec.message());
  return {};
}

}  // namespace

Expected<ExportResult> adopt_export(const ExportOptions& options) {
  ONNXPROOF_TRY(validate_export_options(options));
  const fs::path& from = options.from_export;
  std::error_code ec;
  if (fs::exists(options.out, ec) && fs::equivalent(from, options.out, ec))
    return fail(ErrorCode::usage, "--from-export and --out are the same folder; the export is copied, never changed");
  ONNXPROOF_TRY_ASSIGN(const ExportResult found, read_export_manifest(from));
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  std::vector<fs::path> files = {"export.json", "export.log", "exporter_report.md"};
  if (!found.model.empty()) {
    const fs::path model = found.model.lexically_relative(from);
    if (model.empty() || model.has_parent_path())
      return fail(ErrorCode::invalid_input, (from / "export.json").string() +
                                                ": onnx_model.path must name a file "
                                                "in the export folder");
    ONNXPROOF_TRY_ASSIGN(const std::string sha256, sha256_file(found.model));
    if (sha256 != found.sha256)
      return fail(ErrorCode::invalid_input, found.model.string() + " changed since it was exported (sha256 " + sha256 +
                                                ", export.json says " + found.sha256 +
                                                "): its reference outputs belong to another model");
    files.push_back(model);
    files.push_back(model.string() + ".data");  // the dynamo exporter's external weights
  }
  for (const fs::path& file : files) {
    const auto status = fs::symlink_status(from / file, ec);
    if (!fs::exists(status)) continue;
    if (!fs::is_regular_file(status))
      return fail(ErrorCode::invalid_input, (from / file).string() + " is not a regular file");
    fs::copy_file(from / file, options.out / file, fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(ErrorCode::io, "cannot copy " + (from / file).string() + ": " + ec.message());
  }
  if (fs::is_directory(from / "reference", ec))
    ONNXPROOF_TRY(copy_export_tree(from / "reference", options.out / "reference"));
  return read_export_manifest(options.out);
}

}  // namespace onnxproof
