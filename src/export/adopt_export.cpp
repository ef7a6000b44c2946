// Adopting a finished export (--from-export, prove()): copied into the run folder, never moved.
#include "onnxproof/core/ownership.h"
#include "onnxproof/core/sha256.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/model/model_io.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_export_folder = "an export folder";

// Copies `from` into `to`: regular files and folders only. A link is refused, never followed
// (a reference/ linked elsewhere would copy whatever it points at into the run folder), and so
// is a device or FIFO.
Expected<void> copy_export_tree(const fs::path& from, const fs::path& to) {
  ONNXPROOF_TRY(require_not_a_link(from, k_export_folder));
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + to.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    ONNXPROOF_TRY(require_not_a_link(entry.path(), k_export_folder));
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
  // The export is copied, never changed: the run folder neither is, lies in nor holds it.
  ONNXPROOF_TRY(require_output_apart(options.out, {.folders = {from}}, "--out", OutputKind::whole_folder));
  // What the manifest reads (export.json, reference/cases.json) is the folder's own, not a link's.
  for (const char* own : {"export.json", "reference", "reference/cases.json"})
    ONNXPROOF_TRY(require_not_a_link(from / own, k_export_folder));
  std::error_code ec;
  ONNXPROOF_TRY_ASSIGN(const ExportResult found, read_export_manifest(from));
  fs::create_directories(options.out, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + options.out.string() + ": " + ec.message());
  // encoder.onnx and decoder_merged.onnx: an encoder-decoder's encoder and merged decoder, which
  // the generation proof runs (their sha256 are in reference/generation/generation.json, checked
  // where it is read).
  std::vector<fs::path> files = {"export.json",       "export.log",          "exporter_report.md",      "encoder.onnx",
                                 "encoder.onnx.data", "decoder_merged.onnx", "decoder_merged.onnx.data"};
  if (!found.model.empty()) {
    const fs::path model = found.model.lexically_relative(from);
    if (model.empty() || model.has_parent_path())
      return fail(ErrorCode::invalid_input, (from / "export.json").string() +
                                                ": onnx_model.path must name a file "
                                                "in the export folder");
    ONNXPROOF_TRY(require_not_a_link(found.model, k_export_folder));
    ONNXPROOF_TRY_ASSIGN(const std::string sha256, sha256_file(found.model));
    if (sha256 != found.sha256)
      return fail(ErrorCode::invalid_input, found.model.string() + " changed since it was exported (sha256 " + sha256 +
                                                ", export.json says " + found.sha256 +
                                                "): its reference outputs belong to another model");
    files.push_back(model);
    files.push_back(model.string() + ".data");  // the dynamo exporter's external weights
    // A given file's (--onnx) data files keep the names it gives them; load_model refuses one
    // outside the folder, missing or short.
    ONNXPROOF_TRY_ASSIGN(const LoadedModel loaded, load_model(found.model));
    for (const fs::path& external : loaded.external_files) {
      const fs::path relative = external.lexically_relative(loaded.folder);
      if (relative.empty() || *relative.begin() == "..")
        return fail(ErrorCode::invalid_input, external.string() + " lies outside " + from.string());
      if (relative.has_parent_path()) fs::create_directories(options.out / relative.parent_path(), ec);
      files.push_back(relative);
    }
  }
  for (const fs::path& file : files) {
    const auto status = fs::symlink_status(from / file, ec);
    if (!fs::exists(status)) continue;
    ONNXPROOF_TRY(require_not_a_link(from / file, k_export_folder));
    if (!fs::is_regular_file(status))
      return fail(ErrorCode::invalid_input, (from / file).string() + " is not a regular file");
    fs::copy_file(from / file, options.out / file, fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(ErrorCode::io, "cannot copy " + (from / file).string() + ": " + ec.message());
  }
  // reference/, and components/: a given generation folder's files beside model.onnx (their
  // sha256 are in generation.json too).
  for (const char* folder : {"reference", "components"}) {
    if (fs::is_directory(fs::symlink_status(from / folder, ec)))
      ONNXPROOF_TRY(copy_export_tree(from / folder, options.out / folder));
  }
  return read_export_manifest(options.out);
}

}  // namespace onnxproof
