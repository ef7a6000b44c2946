#include "onnxproof/runtime/library_choice.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_variable = k_onnxruntime_variable;
constexpr const char* k_loaded = k_onnxruntime_loaded_variable;
constexpr const char* k_probe = k_onnxruntime_probe_variable;

// The folder's library path: itself, then each folder its `library-path` file lists.
std::string library_path_of(const fs::path& folder) {
  std::string path = folder.string();
  std::ifstream listed(folder / "library-path");
  for (std::string line; std::getline(listed, line);) {
    if (!line.empty() && line.front() != '#') path += ":" + line;
  }
  return path;
}

// Why the loader cannot start onnxproof with the library the environment names (a file that is no
// library, or a build of another version: it ends the process before main, in its own words,
// exit 127), or "" when it can. A child started the same way finds out first, so the refusal is
// onnxproof's one line instead of the loader's.
std::string loader_refusal() {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  const pid_t pid = ::fork();
  if (pid < 0) return "";
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::setenv(k_probe, "1", 1);
    ::execl("/proc/self/exe", "onnxproof", static_cast<char*>(nullptr));
    ::_exit(126);
  }
  ::close(fds[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0 && said.size() < 4096;) said.append(buffer, n);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  const std::string line = said.substr(0, said.find('\n'));
  return line.empty() ? "the loader refused it (exit " + std::to_string(WEXITSTATUS(status)) + ")" : line;
}

}  // namespace

Expected<void> select_onnxruntime_library(char** argv, const LibraryChoiceEnvironment& environment) {
  if (environment.probe) std::_Exit(0);  // loaded: that is all the probe asks
  const std::string& chosen = environment.chosen;
  if (chosen.empty()) return {};
  std::error_code ec;
  fs::path folder = fs::path(chosen);
  if (fs::is_regular_file(folder, ec)) folder = folder.parent_path();
  folder = fs::weakly_canonical(folder, ec);
  if (ec || !fs::is_regular_file(folder / "libonnxruntime.so.1", ec))
    return fail(ErrorCode::not_found, std::string(k_variable) + "=" + chosen +
                                          " names no ONNX Runtime build: no libonnxruntime.so.1 in " + folder.string() +
                                          " (make setup-gpu installs one in .deps/onnxruntime-gpu)");
  if (folder.string() == environment.loaded) return {};
  const std::string& old = environment.library_path;
  const std::string path = library_path_of(folder) + (old.empty() ? "" : ":" + old);
  ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  ::setenv(k_loaded, folder.string().c_str(), 1);
  if (const std::string refusal = loader_refusal(); !refusal.empty())
    return fail(ErrorCode::runtime, std::string(k_variable) + "=" + chosen +
                                        ": onnxproof cannot start with the libonnxruntime.so.1 in " + folder.string() +
                                        ": " + refusal);
  ::execv("/proc/self/exe", argv);
  return fail(ErrorCode::io, "cannot start again with the ONNX Runtime in " + folder.string());
}

}  // namespace onnxproof
