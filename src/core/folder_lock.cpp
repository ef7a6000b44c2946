#include "onnxproof/core/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace onnxproof {

Expected<FolderLock> FolderLock::take(const std::filesystem::path& folder, std::string_view holder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fail(ErrorCode::io, "cannot open " + folder.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK)
      return fail(ErrorCode::usage, folder.string() + " is in use by another " + std::string(holder) +
                                        "; wait for it to finish, then run again");
    return fail(ErrorCode::io, "cannot lock " + folder.string() + ": " + std::strerror(error));
  }
  return FolderLock(fd);
}

FolderLock::FolderLock(FolderLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }

FolderLock::~FolderLock() {
  if (m_fd >= 0) ::close(m_fd);  // closing the last descriptor releases the lock
}

}  // namespace onnxproof
