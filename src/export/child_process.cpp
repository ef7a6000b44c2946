#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "onnxproof/core/installation.h"
#include "onnxproof/core/source_framework.h"
#include "onnxproof/core/staging.h"

namespace onnxproof {
namespace {

// Ends a child that overran its time and everything it started (its process group): SIGTERM, then
// SIGKILL after five seconds; the group gets SIGKILL either way, since a grandchild may ignore SIGTERM.
void end_child(pid_t pid) {
  ::kill(-pid, SIGTERM);
  bool reaped = false;
  for (int waited = 0; waited < 50 && !reaped; ++waited) {
    reaped = ::waitpid(pid, nullptr, WNOHANG) == pid;
    if (!reaped) ::usleep(100000);
  }
  ::kill(-pid, SIGKILL);
  while (!reaped && ::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Our environment, with the front end first on PYTHONPATH and ONNX Runtime's telemetry off (should
// the exporter load it).
// PYTHONDONTWRITEBYTECODE: importing the user's model file must not leave __pycache__ beside it.
std::vector<std::string> front_end_environment() {
  std::vector<std::string> environment;
  std::string path_entry = installation().python_dir.string();
  for (const std::string& text : installation().environment) {
    if (text.starts_with("PYTHONPATH=")) {
      if (text.size() > 11) path_entry += ":" + text.substr(11);
    } else if (!text.starts_with("ORT_DISABLE_TELEMETRY=") && !text.starts_with("PYTHONDONTWRITEBYTECODE=")) {
      environment.push_back(text);
    }
  }
  environment.push_back("PYTHONPATH=" + path_entry);
  environment.push_back("ORT_DISABLE_TELEMETRY=1");
  environment.push_back("PYTHONDONTWRITEBYTECODE=1");
  return environment;
}

// The char* array execve and posix_spawn take: pointers into `strings` (which must outlive it),
// then a null.
std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// What to do when the interpreter for `framework`'s models cannot start: each framework has an
// environment of its own (front_end_interpreter), made by scripts/setup.sh.
std::string interpreter_advice(std::string_view framework) {
  if (framework == k_tensorflow)
    return "TensorFlow models run in the environment scripts/setup.sh makes in .venv-tf; set ONNXPROOF_TF_PYTHON "
           "or --python";
  return "set --python or ONNXPROOF_PYTHON; scripts/setup.sh makes the default .venv";
}

// Starts `python ARGS...` with the front end on PYTHONPATH, stdin from /dev/null and
// `captured_fd` going into a pipe, in a process group of its own (so that a signal or the time
// limit ends it and whatever it started, even when it ignores SIGINT); returns the child's pid,
// which is also its group's id, and the pipe's read end.
Expected<std::pair<pid_t, int>> spawn_front_end(const std::string& python, std::string_view framework,
                                                std::vector<std::string> args, int captured_fd,
                                                const std::vector<std::string>& extra_environment) {
  args.insert(args.begin(), python);
  std::vector<char*> argv = null_terminated(args);
  std::vector<std::string> environment = front_end_environment();
  for (const auto& entry : extra_environment) {
    const std::string name = entry.substr(0, entry.find('=') + 1);
    std::erase_if(environment, [&](const std::string& existing) { return existing.starts_with(name); });
    environment.push_back(entry);
  }
  std::vector<char*> envp = null_terminated(environment);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return fail(ErrorCode::io, "cannot create a pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // k_both_streams: the child's stdout and stderr share the pipe, so nothing it prints reaches ours.
  for (const int fd :
       captured_fd == k_both_streams ? std::vector{STDOUT_FILENO, STDERR_FILENO} : std::vector{captured_fd})
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], fd);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, python.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return fail(ErrorCode::not_found, "cannot run the Python interpreter '" + python + "': " + std::strerror(spawned) +
                                          " (" + interpreter_advice(framework) + ")");
  }

  return std::pair{pid, pipe_fds[0]};
}

}  // namespace

Expected<int> run_front_end(const std::string& python, std::string_view framework, std::vector<std::string> args,
                            int captured_fd, const std::function<void(const std::string&)>& on_line,
                            double timeout_seconds, const std::vector<std::string>& extra_environment) {
  ONNXPROOF_TRY_ASSIGN(const auto spawned,
                       spawn_front_end(python, framework, std::move(args), captured_fd, extra_environment));
  const auto [pid, read_fd] = spawned;
  // SIGINT, SIGTERM or SIGHUP to onnxproof ends the child's whole process group too (and removes
  // live staging folders), instead of leaving it running on its own.
  set_interrupt_child(pid);
  struct sigaction old_int{}, old_term{}, old_hup{};
  ::sigaction(SIGINT, nullptr, &old_int);
  ::sigaction(SIGTERM, nullptr, &old_term);
  ::sigaction(SIGHUP, nullptr, &old_hup);
  install_interrupt_cleanup();
  const auto restore = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    set_interrupt_child(0);
  };

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string pending;
  char buffer[4096];
  while (true) {
    if (timeout_seconds > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd readable{read_fd, POLLIN, 0};
      const int ready =
          left.count() > 0 ? ::poll(&readable, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000))) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (std::chrono::steady_clock::now() < deadline) continue;
        end_child(pid);
        ::close(read_fd);
        restore();
        return fail(ErrorCode::limit_exceeded, "the export front end ran past its time limit of " +
                                                   std::to_string(static_cast<int64_t>(timeout_seconds)) +
                                                   " s and was stopped (--export-timeout raises it)");
      }
    }
    const ssize_t n = ::read(read_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<std::size_t>(n));
    for (auto newline = pending.find('\n'); newline != std::string::npos; newline = pending.find('\n')) {
      on_line(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty()) on_line(pending);
  ::close(read_fd);
  // The pipe closes when the front end exits; anything it started and left behind ends with it
  // (before the wait, while its group's id cannot belong to another process).
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  restore();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Error exec_front_end(const std::string& python, std::vector<std::string> args) {
  args.insert(args.begin(), python);
  std::vector<char*> argv = null_terminated(args);
  std::vector<std::string> environment = front_end_environment();
  std::vector<char*> envp = null_terminated(environment);
  ::execvpe(python.c_str(), argv.data(), envp.data());
  return Error(ErrorCode::not_found, "cannot run the Python interpreter '" + python + "': " + std::strerror(errno) +
                                         " (set ONNXPROOF_PYTHON; scripts/setup.sh makes the default .venv)");
}

}  // namespace onnxproof
