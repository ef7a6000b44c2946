#include "onnxproof/core/installation.h"

#include <cstdlib>
#include <optional>

#include "build_config.h"

extern char** environ;

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

fs::path release_cache() {
  if (const char* chosen = environment("ONNXPROOF_ORT_CACHE")) return chosen;
  if (const char* xdg = environment("XDG_CACHE_HOME")) return fs::path(xdg) / "onnxproof" / "onnxruntime";
  const char* home = environment("HOME");
  return fs::path(home ? home : "/") / ".cache" / "onnxproof" / "onnxruntime";
}

std::vector<std::string> process_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry; ++entry) entries.emplace_back(*entry);
  return entries;
}

Installation source_tree() {
  return {ONNXPROOF_DATA_DIR,     ONNXPROOF_PYTHON_SOURCE_DIR, ONNXPROOF_EXAMPLES_DIR,
          ONNXPROOF_PYTHON,       ONNXPROOF_TF_PYTHON,         release_cache(),
          ONNXPROOF_OPENVINO_DIR, process_environment()};
}

std::optional<Installation>& chosen() {
  static std::optional<Installation> value;
  return value;
}

}  // namespace

Installation resolve_installation(const fs::path& executable) {
  Installation result = source_tree();
  // An install: <prefix>/bin/onnxproof beside <prefix>/share/onnxproof (cmake --install).
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(executable, ec);
  const fs::path share = real.parent_path().parent_path() / "share" / "onnxproof";
  if (!ec && real.parent_path().filename() == "bin" && fs::is_directory(share / "data", ec)) {
    result.data_dir = share / "data";
    result.python_dir = share / "python";
    result.examples_dir = share / "examples";
  }
  if (const char* data = environment("ONNXPROOF_DATA")) result.data_dir = data;
  if (const char* python_dir = environment("ONNXPROOF_PYTHONPATH")) result.python_dir = python_dir;
  if (const char* python = environment("ONNXPROOF_PYTHON")) result.python = python;
  if (const char* python = environment("ONNXPROOF_TF_PYTHON")) result.tf_python = python;
  if (const char* openvino = environment("ONNXPROOF_OPENVINO")) result.openvino_dir = openvino;
  return result;
}

void use_installation(Installation installation) { chosen() = std::move(installation); }

const Installation& installation() {
  static const Installation fallback = source_tree();
  return chosen() ? *chosen() : fallback;
}

}  // namespace onnxproof
