#pragma once
// An advisory lock on a folder itself (flock on its descriptor): nothing is written into it, and
// the lock goes with the process however it ends. Two commands that replace one run folder as a
// whole (`onnxproof repair RUN`) take it so that the second is refused instead of emptying what
// the first is working in.

#include <filesystem>
#include <string_view>

#include "onnxproof/core/error.h"

namespace onnxproof {

class FolderLock {
 public:
  /// Locks `folder`; ErrorCode::usage naming `holder` when another process holds the lock,
  /// ErrorCode::io when the folder cannot be opened.
  static Expected<FolderLock> take(const std::filesystem::path& folder, std::string_view holder);
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

 private:
  explicit FolderLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

}  // namespace onnxproof
