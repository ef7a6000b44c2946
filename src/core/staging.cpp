#include "onnxproof/core/staging.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "onnxproof/core/atomic_file.h"
#include "onnxproof/core/numbered_name.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {

// The live staging folders, in fixed storage: the signal handler may not allocate.
constexpr int k_slots = 8;
std::array<std::array<char, 4096>, k_slots> g_paths{};
std::array<std::atomic<bool>, k_slots> g_claimed{};  // the slot is taken
std::array<std::atomic<bool>, k_slots> g_ready{};    // and its path fully written: the handler may use it
volatile sig_atomic_t g_child = 0;

int claim_slot(const fs::path& path) {
  const std::string text = path.string();
  if (text.size() >= g_paths[0].size()) return -1;
  for (int i = 0; i < k_slots; ++i) {
    bool expected = false;
    if (!g_claimed[i].compare_exchange_strong(expected, true)) continue;
    std::memcpy(g_paths[i].data(), text.c_str(), text.size() + 1);
    g_ready[i] = true;
    return i;
  }
  return -1;
}

void release_slot(int slot) {
  if (slot < 0) return;
  g_ready[slot] = false;
  g_claimed[slot] = false;
}

// Async-signal-safe: fork and exec rm for each live staging folder, then re-raise.
void clean_up_and_end(int signal_number) {
  // The child runs in a process group of its own (export/child_process.cpp): SIGKILL to the group,
  // since a child that swallows SIGINT (a model's forward catching KeyboardInterrupt) would
  // otherwise outlive us, and the handler must not wait for it.
  if (g_child > 0) {
    ::kill(-static_cast<pid_t>(g_child), SIGKILL);
    ::kill(static_cast<pid_t>(g_child), SIGKILL);
  }
  for (int i = 0; i < k_slots; ++i) {
    if (!g_ready[i]) continue;
    const pid_t pid = ::fork();
    if (pid == 0) {
      char rm[] = "/bin/rm";
      char flags[] = "-rf";
      char end[] = "--";
      char* argv[] = {rm, flags, end, g_paths[i].data(), nullptr};
      char* envp[] = {nullptr};
      ::execve(rm, argv, envp);
      ::_exit(127);
    }
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  // One line, as every onnxproof error (write(2): the one way to print from a signal handler);
  // the signal then ends the process, which the shell reports as 128 + its number (130 for ^C).
  static constexpr char k_interrupted[] =
      "onnxproof: interrupted: nothing was published; an earlier run is as it was\n";
  static constexpr char k_terminated[] = "onnxproof: terminated: nothing was published; an earlier run is as it was\n";
  const bool interrupted = signal_number == SIGINT;
  (void)!::write(STDERR_FILENO, interrupted ? k_interrupted : k_terminated,
                 (interrupted ? sizeof k_interrupted : sizeof k_terminated) - 1);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

// A destination as a folder's own path: absolute, normal, no trailing separator ("RUN/" and "."
// name the folder itself, whose staging sibling lies beside it, never inside).
fs::path folder_path(const fs::path& destination) {
  std::error_code ec;
  fs::path path = fs::absolute(destination, ec).lexically_normal();
  if (!path.has_filename() && path.has_parent_path() && path != path.root_path()) path = path.parent_path();
  return path;
}

fs::path folder_of(const fs::path& destination) {
  return destination.has_parent_path() ? destination.parent_path() : fs::path(".");
}

// ".NAME.TAG-PID" beside `destination`: a staging folder (tmp) or a run folder stepping aside (old).
fs::path beside(const fs::path& destination, std::string_view tag, uint64_t pid) {
  return folder_of(destination) /
         ("." + destination.filename().string() + "." + std::string(tag) + "-" + std::to_string(pid));
}

bool process_runs(uint64_t pid) {
  return pid <= static_cast<uint64_t>(std::numeric_limits<pid_t>::max()) &&
         (static_cast<pid_t>(pid) == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

// The ".NAME.TAG-PID" folders beside `destination` whose process no longer runs (killed mid-way).
std::vector<fs::path> left_by_dead_runs(const fs::path& destination, std::string_view tag) {
  const std::string prefix = "." + destination.filename().string() + "." + std::string(tag) + "-";
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder_of(destination), ec)) {
    const auto pid = number_after(entry.path().filename().string(), prefix);
    if (pid && !process_runs(*pid)) found.push_back(entry.path());
  }
  return found;
}

}  // namespace

FolderIdentity identity_of(const fs::path& folder) {
  struct stat info{};
  if (::stat(folder.c_str(), &info) != 0) return {};
  return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

Expected<void> link_folder_contents(const fs::path& published, const fs::path& staging,
                                    const std::vector<std::string>& except) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(published, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(published);
    if (it.depth() == 0 && std::find(except.begin(), except.end(), relative.string()) != except.end()) {
      it.disable_recursion_pending();
      continue;
    }
    const fs::path to = staging / relative;
    const auto status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(status)) {
      fs::copy_symlink(it->path(), to, ec);
    } else if (fs::is_directory(status)) {
      fs::create_directory(to, ec);
    } else if (fs::is_regular_file(status)) {
      fs::create_hard_link(it->path(), to, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(it->path(), to, ec);
      }
    }
    if (ec)
      return fail(ErrorCode::io, "cannot stage " + it->path().string() + " in " + to.string() + ": " + ec.message());
  }
  if (ec) return fail(ErrorCode::io, "cannot read " + published.string() + ": " + ec.message());
  return {};
}

Expected<void> publish_folder(const fs::path& staging, const fs::path& given) {
  const fs::path destination = folder_path(given);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(destination, ec))) {
    fs::rename(staging, destination, ec);
    if (ec)
      return fail(ErrorCode::io,
                  "cannot move " + staging.string() + " to " + destination.string() + ": " + ec.message());
    return {};
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staging, ec);  // now the old contents
    return {};
  }
  // No atomic exchange here: the old folder steps aside under a name the next run recognizes.
  const fs::path old = beside(destination, "old", static_cast<uint64_t>(::getpid()));
  fs::rename(destination, old, ec);
  if (ec) return fail(ErrorCode::io, "cannot replace " + destination.string() + ": " + ec.message());
  fs::rename(staging, destination, ec);
  if (ec) {
    std::error_code restore;
    fs::rename(old, destination, restore);
    return fail(ErrorCode::io, "cannot move " + staging.string() + " to " + destination.string() + ": " + ec.message());
  }
  fs::remove_all(old, ec);
  return {};
}

bool recover_interrupted_publish(const fs::path& given) {
  const fs::path destination = folder_path(given);
  std::error_code ec;
  bool recovered = false;
  for (const auto& old : left_by_dead_runs(destination, "old")) {
    if (!recovered && !fs::exists(fs::symlink_status(destination, ec))) {
      fs::rename(old, destination, ec);
      recovered = !ec;
    } else {
      fs::remove_all(old, ec);  // the publish got through; this is the old run
    }
  }
  return recovered;
}

Expected<StagingFolder> StagingFolder::create(const fs::path& given) {
  const fs::path destination = folder_path(given);
  std::error_code ec;
  const fs::path parent = folder_of(destination);
  fs::create_directories(parent, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + parent.string() + ": " + ec.message());
  recover_interrupted_publish(destination);
  for (const auto& stale : left_by_dead_runs(destination, "tmp")) fs::remove_all(stale, ec);
  const fs::path path = beside(destination, "tmp", static_cast<uint64_t>(::getpid()));
  fs::remove_all(path, ec);
  fs::create_directories(path, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + path.string() + ": " + ec.message());
  return StagingFolder(path, destination, claim_slot(fs::absolute(path, ec)));
}

StagingFolder::StagingFolder(StagingFolder&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_destination(std::move(other.m_destination)),
      m_slot(other.m_slot),
      m_done(other.m_done) {
  other.m_done = true;
  other.m_slot = -1;
}

StagingFolder::~StagingFolder() {
  if (!m_done) {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  release_slot(m_slot);
}

Expected<void> StagingFolder::publish() { return publish(m_destination); }

Expected<void> StagingFolder::publish_over(const FolderIdentity& copied) {
  if (identity_of(m_destination) != copied)
    return fail(ErrorCode::io, m_destination.string() +
                                   " was replaced by another run while this command worked on a copy of it; nothing "
                                   "was published over the new run: run the command again");
  return publish();
}

Expected<void> StagingFolder::publish(const fs::path& destination) {
  ONNXPROOF_TRY(publish_folder(m_path, destination));
  m_done = true;
  release_slot(m_slot);
  m_slot = -1;
  return {};
}

void install_interrupt_cleanup() {
  struct sigaction action{};
  action.sa_handler = clean_up_and_end;
  // One cleanup at a time: a SIGTERM during a SIGINT's cleanup waits for it (one line, not two).
  sigemptyset(&action.sa_mask);
  for (const int blocked : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, blocked);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGHUP, &action, nullptr);
}

void set_interrupt_child(int pid) { g_child = pid; }

}  // namespace onnxproof
