// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A binary file opened for reading with its length known before anything
/// is allocated for it: the readers of checkpoints and of safetensors
/// files check the lengths a file declares against its size first.

#include <gradsum/core/error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace gradsum {
namespace detail {

/// What a file that is not a regular file is, for messages.
inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

/// A regular file open for reading (a pipe or a device such as /dev/zero
/// is refused, since it has no length to check); errors name `function`
/// and the path. Closed when destroyed.
class InputFile {
 public:
  /// Opens `path`; `kind` says what a file there should hold ("a
  /// checkpoint") in the message refusing what is not a regular file.
  InputFile(const std::string& path, const char* function, const char* kind)
      : path_(path), function_(function) {
    // O_NONBLOCK: opening a pipe without a writer must not wait for one.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) fail(function, ": cannot open '", path, "': ", std::strerror(errno));
    struct stat info;
    if (::fstat(fd_, &info) != 0) {
      const int error = errno;
      ::close(fd_);
      fail(function, ": cannot examine '", path, "': ", std::strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
      ::close(fd_);
      fail(function, ": '", path, "' is not a regular file (it is ", file_kind(info.st_mode),
           "); ", kind, " is read from a regular file");
    }
    size_ = std::uint64_t(info.st_size);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::close(fd_); }

  /// The file's length when it was opened.
  std::uint64_t size() const { return size_; }

  /// Reads up to `n` bytes into `out`; returns how many (fewer at the end
  /// of the file).
  std::size_t read_up_to(char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const ::ssize_t r = ::read(fd_, out + got, n - got);
      if (r == 0) break;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(function_, ": reading '", path_, "' failed: ", std::strerror(errno));
      got += std::size_t(r);
    }
    return got;
  }

 private:
  std::string path_;
  const char* function_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace detail
}  // namespace gradsum
