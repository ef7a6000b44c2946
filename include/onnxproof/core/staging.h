#pragma once
// Building a folder out of sight and publishing it in one step: the run folder of a pipeline, a
// golden set. A staging folder is ".NAME.tmp-PID" beside the destination; it is removed when the
// work fails, when SIGINT or SIGTERM end the process, or (after SIGKILL) by the next run.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// Puts `staging` in place of `destination` in one step. When `destination` exists the two are
/// exchanged atomically (renameat2 RENAME_EXCHANGE) and the old contents removed; where the file
/// system cannot exchange, the old folder is first renamed ".NAME.old-PID", and
/// recover_interrupted_publish() puts it back should the process die before the new one is in place.
Expected<void> publish_folder(const std::filesystem::path& staging, const std::filesystem::path& destination);

/// A publish interrupted between its two renames left no `destination` and the old folder as
/// ".NAME.old-PID" of a process that no longer runs: moves it back. True when it did.
bool recover_interrupted_publish(const std::filesystem::path& destination);

/// What identifies a folder across renames: its device and inode. A run folder is replaced as a
/// whole, so a run folder whose identity changed holds another run.
struct FolderIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FolderIdentity&) const = default;
};

/// `folder`'s identity; zeros when it cannot be read.
FolderIdentity identity_of(const std::filesystem::path& folder);

/// Fills `staging` with `published`'s tree as it is, for a change of a finished run that then
/// replaces it as a whole: folders made anew, regular files hard-linked (copied where the file
/// system cannot link), symbolic links copied as links, never followed; the top-level entries
/// named in `except` left out. Whatever the change writes goes through write_file_atomically()
/// or a folder of its own, so no linked file is ever written in place.
Expected<void> link_folder_contents(const std::filesystem::path& published, const std::filesystem::path& staging,
                                    const std::vector<std::string>& except);

/// A staging folder that is removed unless published: on destruction, and when SIGINT or SIGTERM
/// end the process (install_interrupt_cleanup()). Creating one also removes stale staging folders
/// of the same destination and recovers an interrupted publish.
class StagingFolder {
 public:
  static Expected<StagingFolder> create(const std::filesystem::path& destination);
  StagingFolder(StagingFolder&& other) noexcept;
  StagingFolder& operator=(StagingFolder&&) = delete;
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;
  ~StagingFolder();

  const std::filesystem::path& path() const { return m_path; }
  /// publish_folder(path(), destination).
  Expected<void> publish();
  /// publish_folder(path(), `destination`): another folder beside the destination it was made for.
  Expected<void> publish(const std::filesystem::path& destination);
  /// publish(), for a staged copy of the destination: only while the destination is still the
  /// folder it was copied from (`copied`), never over a run published there meanwhile.
  Expected<void> publish_over(const FolderIdentity& copied);

 private:
  StagingFolder(std::filesystem::path path, std::filesystem::path destination, int slot)
      : m_path(std::move(path)), m_destination(std::move(destination)), m_slot(slot) {}
  std::filesystem::path m_path;
  std::filesystem::path m_destination;
  int m_slot = -1;  // its entry in the interrupt-cleanup list
  bool m_done = false;
};

/// Installs the SIGINT/SIGTERM/SIGHUP handler that removes live staging folders, ends the export's child
/// process (set_interrupt_child) and then lets the signal end the process. Called once by the driver.
void install_interrupt_cleanup();

/// The child process to end, with its process group, on SIGINT/SIGTERM/SIGHUP (0: none).
void set_interrupt_child(int pid);

}  // namespace onnxproof
