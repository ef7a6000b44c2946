#include "runtime_library.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

namespace onnxproof::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_variable = "ONNXPROOF_ONNXRUNTIME";
// Set for the process started again, so it does not start itself a third time.
constexpr const char* k_loaded = "ONNXPROOF_ONNXRUNTIME_LOADED";

// The folder's library path: itself, then each folder its `library-path` file lists.
std::string library_path_of(const fs::path& folder) {
  std::string path = folder.string();
  std::ifstream listed(folder / "library-path");
  for (std::string line; std::getline(listed, line);) {
    if (!line.empty() && line.front() != '#') path += ":" + line;
  }
  return path;
}

}  // namespace

int select_onnxruntime_library(char** argv) {
  const char* chosen = std::getenv(k_variable);
  if (chosen == nullptr || *chosen == '\0') return 0;
  std::error_code ec;
  fs::path folder = fs::path(chosen);
  if (fs::is_regular_file(folder, ec)) folder = folder.parent_path();
  folder = fs::weakly_canonical(folder, ec);
  if (ec || !fs::is_regular_file(folder / "libonnxruntime.so.1", ec)) {
    std::cerr << "onnxproof: error: " << k_variable << "=" << chosen
              << " names no ONNX Runtime build: no libonnxruntime.so.1 in " << folder.string()
              << " (make setup-gpu installs one in .deps/onnxruntime-gpu)\n";
    return 3;
  }
  const char* loaded = std::getenv(k_loaded);
  if (loaded != nullptr && folder.string() == loaded) return 0;
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string path = library_path_of(folder) + (old != nullptr && *old != '\0' ? ":" + std::string(old) : "");
  ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  ::setenv(k_loaded, folder.string().c_str(), 1);
  ::execv("/proc/self/exe", argv);
  std::cerr << "onnxproof: error: cannot start again with the ONNX Runtime in " << folder.string() << "\n";
  return 3;
}

}  // namespace onnxproof::cli
