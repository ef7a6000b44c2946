#include "onnxproof/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "onnxproof/core/ownership.h"

namespace onnxproof {
namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

Expected<AtomicFile> AtomicFile::create(const fs::path& destination) {
  ONNXPROOF_TRY(require_replaceable_file(destination));
  const fs::path folder = destination.has_parent_path() ? destination.parent_path() : fs::path(".");
  std::string pattern = (folder / ("." + destination.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) {
    return fail(ErrorCode::io, "cannot create a file in " + folder.string() + ": " + errno_text());
  }
  // mkstemp creates 0600; give the result the usual permissions (subject to umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  return AtomicFile(fd, fs::path(pattern), destination);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_fd(other.m_fd),
      m_temp(std::move(other.m_temp)),
      m_destination(std::move(other.m_destination)),
      m_committed(other.m_committed) {
  other.m_fd = -1;
  other.m_committed = true;  // the moved-from object owns nothing to clean up
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) ::close(m_fd);
  if (!m_committed && !m_temp.empty()) {
    std::error_code ignored;
    fs::remove(m_temp, ignored);
  }
}

Expected<void> AtomicFile::write(std::span<const std::byte> data) {
  const auto* cursor = reinterpret_cast<const char*>(data.data());
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t written = ::write(m_fd, cursor, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::io, "cannot write " + m_destination.string() + ": " + errno_text());
    }
    cursor += written;
    left -= static_cast<std::size_t>(written);
  }
  return {};
}

Expected<void> AtomicFile::write(std::string_view text) {
  return write(std::as_bytes(std::span(text.data(), text.size())));
}

Expected<void> AtomicFile::commit() {
  if (::fsync(m_fd) != 0 || ::close(m_fd) != 0) {
    m_fd = -1;
    return fail(ErrorCode::io, "cannot write " + m_destination.string() + ": " + errno_text());
  }
  m_fd = -1;
  if (::rename(m_temp.c_str(), m_destination.c_str()) != 0) {
    return fail(ErrorCode::io, "cannot move the finished file to " + m_destination.string() + ": " + errno_text());
  }
  m_committed = true;
  return {};
}

Expected<void> require_replaceable_file(const fs::path& destination) {
  std::error_code ec;
  const auto type = fs::symlink_status(destination, ec).type();
  if (ec || type == fs::file_type::not_found || type == fs::file_type::regular || type == fs::file_type::symlink)
    return {};
  return fail(ErrorCode::usage, "refusing to replace " + destination.string() +
                                    ": it is not a regular file (onnxproof replaces only regular files)");
}

Expected<void> write_file_atomically(const fs::path& path, std::string_view contents) {
  ONNXPROOF_TRY_ASSIGN(auto file, AtomicFile::create(path));
  ONNXPROOF_TRY(file.write(contents));
  return file.commit();
}

Expected<uint64_t> readable_file_size(const fs::path& path, uint64_t max_bytes) {
  ONNXPROOF_TRY(require_regular_file(path));  // before anything opens it: a FIFO would block
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return fail(ErrorCode::io, "cannot read " + path.string() + ": " + ec.message());
  if (size > max_bytes) {
    return fail(ErrorCode::limit_exceeded, path.string() + " is " + std::to_string(size) +
                                               " bytes, over the limit of " + std::to_string(max_bytes));
  }
  return size;
}

Expected<std::string> read_file(const fs::path& path, uint64_t max_bytes) {
  ONNXPROOF_TRY_ASSIGN(const uint64_t size, readable_file_size(path, max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, "cannot open " + path.string());
  std::string data(static_cast<std::size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) {
    return fail(ErrorCode::io, "cannot read " + path.string() + ": file changed while reading");
  }
  return data;
}

Expected<void> copy_by_hard_links(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  const auto links = fs::copy_options::recursive | fs::copy_options::copy_symlinks;
  std::error_code ec;
  fs::copy(from, to, links | fs::copy_options::create_hard_links, ec);
  if (ec) {  // another file system, or one without hard links
    fs::remove_all(to, ec);
    fs::copy(from, to, links, ec);
  }
  if (ec) return fail(ErrorCode::io, "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
  return {};
}

}  // namespace onnxproof
