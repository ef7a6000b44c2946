#pragma once
// Reading the JSON files onnxproof's steps hand each other (export.json, cases.json): one reader,
// one way of naming the field that breaks a file's schema.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// A JSON object from `path` (at most 64 MiB); `code` when it is unreadable, malformed or not an
/// object.
Expected<nlohmann::json> read_json_object(const std::filesystem::path& path, ErrorCode code);

/// "PATH: FIELD: expected WHAT", the error for a field that breaks the file's schema.
Error field_error(const std::filesystem::path& path, ErrorCode code, const std::string& field, const std::string& what);

}  // namespace onnxproof
