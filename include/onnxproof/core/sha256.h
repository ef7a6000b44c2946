#pragma once
// SHA-256 digests (OpenSSL's EVP), for model identity and golden file integrity.

#include <filesystem>
#include <string>
#include <string_view>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// Lower-case hex SHA-256 of a file, read in chunks. Fails when the file cannot be read.
Expected<std::string> sha256_file(const std::filesystem::path& path);

/// Lower-case hex SHA-256 of bytes in memory.
std::string sha256_bytes(std::string_view bytes);

}  // namespace onnxproof
