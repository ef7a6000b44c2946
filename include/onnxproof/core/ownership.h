#pragma once
// The one ownership rule every writer calls: an output never resolves (links followed) to a file
// the same command reads, nor into a folder it reads, and a folder replaced whole never holds one.

#include <filesystem>
#include <string_view>
#include <vector>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// What one command reads: files (a model, its external data, export.json beside it) and folders
/// read whole (a reference data set, a golden folder, an export), every file inside them an input.
struct CommandInputs {
  std::vector<std::filesystem::path> files{};
  std::vector<std::filesystem::path> folders{};
};

/// How an output is written: one file, files written into a folder, or a folder replaced whole
/// (a run folder, a golden folder: everything inside goes when it is published).
enum class OutputKind { file, into_folder, whole_folder };

/// ErrorCode::usage "refusing to write OUT: it is an input of this command (IN)" when `output`
/// (given by `option`, e.g. "--json") resolves to one of `inputs`' files (a hard link counts), lies
/// in one of their folders, or, for OutputKind::whole_folder, holds one of them. An empty
/// `output` (the option not given) passes. Also refuses replacing a non-regular file (a FIFO, a
/// folder) with a file. Reads nothing but file metadata.
Expected<void> require_output_apart(const std::filesystem::path& output, const CommandInputs& inputs,
                                    std::string_view option, OutputKind kind = OutputKind::file);

/// ErrorCode::invalid_input "PATH is not a regular file" when `path` exists and is a FIFO, a
/// device, a socket or a folder (links followed), checked by stat before anything opens it, so a
/// FIFO never blocks a reader; not_found when it is missing.
Expected<void> require_regular_file(const std::filesystem::path& path);

/// ErrorCode::invalid_input "PATH is a symbolic link; onnxproof does not follow links in WHAT"
/// when `path` is a link (not followed); passes when it is missing. For what a run or export
/// folder holds, which is copied or read as the folder's own.
Expected<void> require_not_a_link(const std::filesystem::path& path, std::string_view what);

}  // namespace onnxproof
