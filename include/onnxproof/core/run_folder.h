#pragma once
// What makes a folder onnxproof's own run folder, and the rule for replacing one: onnxproof
// replaces only what it made. Every publish of a run folder (pipeline, export, --from-export,
// the attached pipeline, --exporter both and its sub-runs) writes the marker `.onnxproof-run`.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// The marker file's name and the schema id it holds.
inline constexpr std::string_view k_run_marker = ".onnxproof-run";
inline constexpr std::string_view k_run_schema = "onnxproof.run/1";

/// Writes FOLDER/.onnxproof-run: {"schema": "onnxproof.run/1", "command": COMMAND, "model": MODEL}.
/// ErrorCode::io when it cannot be written.
Expected<void> write_run_marker(const std::filesystem::path& folder, std::string_view command, std::string_view model);

/// Whether `name` is an entry a run writes at the top of a run folder (report.json, model.onnx,
/// reference/, golden/, the sub-runs of --exporter both: dynamo/ and torchscript/, tf2onnx/ and
/// keras/ ...), or the temporary of one that a killed run leaves (".NAME.tmp-PID", "NAME.tmp-PID",
/// ".golden.old-PID", "reference.partial"...).
/// `is_folder`: the entry is a real folder (never a link).
bool is_run_folder_entry(std::string_view name, bool is_folder);

/// The first entry (by name) of `folder` that `known(name, is_folder)` does not accept, or a link:
/// its name; nullopt when every entry is known. The folder is read, never entered through a link.
std::optional<std::string> first_foreign_entry(const std::filesystem::path& folder,
                                               bool (*known)(std::string_view name, bool is_folder));

/// The run folder `out` may be replaced: it does not exist, is empty, holds only a golden set to
/// verify against (golden/manifest.json), or is an earlier run: the marker (or, from before the
/// marker, report.json, export.json or export.log) and nothing a run does not write (sub-run folders
/// checked the same way). ErrorCode::usage otherwise, naming the first foreign entry; nothing is
/// touched. A link is never followed.
/// `remedy` ends the refusal: what the user does about it (a command without --out says another).
Expected<void> require_replaceable_run_folder(const std::filesystem::path& out,
                                              std::string_view remedy = "give --out a new or empty folder");

}  // namespace onnxproof
