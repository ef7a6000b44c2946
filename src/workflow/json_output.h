#pragma once
// The --json files of check, ops and parity: indented, invalid UTF-8 replaced, written atomically.

#include <filesystem>

#include <nlohmann/json.hpp>

#include "onnxproof/core/atomic_file.h"

namespace onnxproof {

/// Writes `json` to `path` unless `path` is empty (no --json given).
inline Expected<void> write_json_output(const std::filesystem::path& path, const nlohmann::json& json) {
  if (path.empty()) return {};
  return write_file_atomically(path, json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace onnxproof
