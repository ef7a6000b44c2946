#pragma once
// Shared by the fuzz targets: the input as a file (the readers under test take paths, as the
// product's commands do) in one private folder per fuzzing process, removed at exit.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace onnxproof::fuzz {

inline const std::filesystem::path& scratch_folder() {
  static const std::filesystem::path folder = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "onnxproof-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_folder(), ec);
    });
    return std::filesystem::path(pattern);
  }();
  return folder;
}

inline std::filesystem::path write_input(const std::string& name, std::string_view bytes) {
  const auto path = scratch_folder() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace onnxproof::fuzz
