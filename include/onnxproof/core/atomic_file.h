#pragma once
// Atomic file writes: data goes to a temporary file in the destination's folder and is renamed
// into place only when complete, so an interrupted run never leaves a half-written file.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "onnxproof/core/error.h"

namespace onnxproof {

class AtomicFile {
 public:
  /// Creates the temporary file beside `destination`. Fails if the folder is missing or not
  /// writable.
  static Expected<AtomicFile> create(const std::filesystem::path& destination);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  /// The open file descriptor of the temporary file (for protobuf's FileOutputStream).
  int fd() const { return m_fd; }

  /// Appends bytes; fails on a short write (disk full).
  Expected<void> write(std::span<const std::byte> data);
  Expected<void> write(std::string_view text);

  /// Flushes to disk, closes and renames over the destination.
  Expected<void> commit();

 private:
  AtomicFile(int fd, std::filesystem::path temp, std::filesystem::path destination)
      : m_fd(fd), m_temp(std::move(temp)), m_destination(std::move(destination)) {}

  int m_fd = -1;
  std::filesystem::path m_temp;
  std::filesystem::path m_destination;
  bool m_committed = false;
};

/// onnxproof replaces only regular files: ErrorCode::usage when `destination` exists and is a
/// folder, a device, a FIFO or a socket. AtomicFile::create checks it.
Expected<void> require_replaceable_file(const std::filesystem::path& destination);

/// A copy of the folder (or file) `from` at `to`, by hard links where the file system allows, else
/// by copying; a symbolic link inside is copied as a link, never followed. For onnxproof's own
/// files, which are only ever replaced, never written in place. ErrorCode::io naming both paths.
Expected<void> copy_by_hard_links(const std::filesystem::path& from, const std::filesystem::path& to);

/// Writes `contents` to `path` atomically.
Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents);

/// The size of a regular file; fails (not_found, invalid_input, limit_exceeded) when it is missing,
/// not a regular file, or larger than `max_bytes`, so callers check before they allocate.
Expected<uint64_t> readable_file_size(const std::filesystem::path& path, uint64_t max_bytes);

/// Reads a whole file, refusing files larger than `max_bytes` before allocating.
Expected<std::string> read_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace onnxproof
