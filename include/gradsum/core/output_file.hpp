// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// OutputFile: the one way gradsum writes a file (parameters, logs,
/// checkpoints, anything a program saves). It writes exactly where the
/// user points and nowhere else, and a failure leaves every existing file
/// as it was. POSIX only; no Kokkos.

#include <gradsum/core/error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>

namespace gradsum {

/// How an OutputFile treats its path.
struct OutputOptions {
  /// Whether the path "-" means standard output (text outputs); when false
  /// "-" is refused, since a binary file such as a checkpoint must be
  /// readable back.
  bool standard_output = true;
  /// Start from what the target holds now (a regular file that exists),
  /// as a log continued after a resume does; a target written in place
  /// (see OutputFile) is appended to in any case.
  bool append = false;
};

namespace detail {

/// The rule of the kernel's `fs.protected_symlinks`, applied whatever that
/// setting: a link in a sticky, world-writable folder (such as /tmp) is
/// followed only if it belongs to the follower or to the folder's owner.
inline bool may_follow(const struct stat& link, const struct stat& folder) {
  const mode_t shared = S_ISVTX | S_IWOTH;
  return link.st_uid == ::geteuid() || (folder.st_mode & shared) != shared ||
         link.st_uid == folder.st_uid;
}

/// Whether the folder open as `fd` is in /proc, whose links (/proc/self/fd/N)
/// name open files, not paths: only the kernel can follow them.
inline bool in_proc(int fd) {
#ifdef __linux__
  struct statfs info;
  return ::fstatfs(fd, &info) == 0 && info.f_type == 0x9fa0;  // PROC_SUPER_MAGIC
#else
  (void)fd;
  return false;
#endif
}

}  // namespace detail

/// The options of a binary output (a checkpoint): no standard output.
inline OutputOptions binary_output() {
  OutputOptions o;
  o.standard_output = false;
  return o;
}

/// A file being written, which takes the place of its target only when
/// commit() succeeds.
///
/// The path is walked one name at a time, each symbolic link on it (a
/// folder's or the target's) checked before it is followed: one in a
/// sticky, world-writable folder that belongs neither to the caller nor to
/// the folder's owner is refused (detail::may_follow). What the walk finds
/// decides, by its type, never by its name:
///
/// - A regular file, or nothing yet: a link the user names is kept and its
///   target is written; the bytes go to a temporary file created
///   exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`, an unpredictable name
///   `.NAME.<16 hex digits>.tmp`) in the target's real folder. commit()
///   flushes it to the disk, gives it the target's permissions (and owner,
///   where allowed) and renames it over the target, then flushes the
///   folder. A planted file or link under any name is never written
///   through, and a target the user may not write is refused.
/// - Anything else that is not a folder (a FIFO, a device, a socket), and
///   anything in /proc (an open file named `/proc/self/fd/N`, or
///   `/dev/stdout` that links there, which the kernel alone can follow):
///   written in place, appending, with no temporary file and no rename.
///   Opening a FIFO waits for its reader.
/// - "-": standard output (see OutputOptions::standard_output).
///
/// Every failure throws gradsum::Error naming `who` (the flag or function
/// the path came from), the path and the system's reason: a folder that
/// does not exist or may not be written, a short write, ENOSPC, EFBIG, a
/// failed flush, sync or rename. The temporary file is then removed and
/// the target is as it was. An OutputFile destroyed without commit()
/// removes its temporary file too. (A process killed while writing leaves
/// the temporary file, and the target as it was.) Writes are buffered;
/// nothing here is collective: under MPI the caller makes every rank learn
/// of a failure on the rank that writes.
class OutputFile {
 public:
  OutputFile(std::string path, std::string who, OutputOptions options = {})
      : OutputFile(std::move(path), std::move(who), options, false) {}
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { discard(); }

  /// Checks, before long work, that `path` could be written as an
  /// OutputFile would write it (its folder exists and may be written, or
  /// it is "-" or a FIFO or device that exists), and changes nothing: a
  /// target written in place is not even opened. Throws as the
  /// constructor does.
  static void check(const std::string& path, const std::string& who, OutputOptions options = {}) {
    OutputFile probe(path, who, options, true);
  }

  /// Where the bytes go.
  enum class Kind {
    replace,          ///< a temporary file renamed over the target by commit()
    in_place,         ///< the target itself (a FIFO, a device …)
    standard_output   ///< "-"
  };
  Kind kind() const { return kind_; }
  /// The path as given.
  const std::string& path() const { return path_; }
  /// Whether commit() has succeeded.
  bool committed() const { return committed_; }

  /// Appends `n` bytes (buffered; see flush()).
  void write(const char* bytes, std::size_t n) {
    check_open();
    buffer_.append(bytes, n);
    if (buffer_.size() >= buffer_limit) flush();
  }
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  /// Appends printf-style formatted text.
  [[gnu::format(printf, 2, 3)]] void print(const char* format, ...) {
    char small[256];
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0) fail(who_, ": formatting a line for '", path_, "' failed");
    if (std::size_t(n) < sizeof small) return write(small, std::size_t(n));
    std::string large(std::size_t(n) + 1, '\0');
    va_start(args, format);
    std::vsnprintf(&large[0], large.size(), format, args);
    va_end(args);
    write(large.data(), std::size_t(n));
  }

  /// Hands the buffered bytes to the system (the temporary file, or the
  /// target written in place). Throws on a failed or short write, removing
  /// the temporary file.
  void flush() {
    check_open();
    if (kind_ == Kind::standard_output && std::fflush(stdout) != 0)
      fail_write("standard output", errno);  // keeps the order of the program's own printf
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        written_ += done;
        fail_write("", n < 0 ? errno : EIO);
      }
      done += std::size_t(n);
    }
    written_ += done;
    buffer_.clear();
  }

  /// Finishes the file: flushes it, and for a temporary file syncs it to
  /// the disk and renames it over the target (atomic in POSIX), then syncs
  /// the folder. Throws, leaving the target as it was, on any failure.
  /// Blocking.
  void commit() {
    flush();
    if (kind_ == Kind::replace) {
      if (::fsync(fd_) != 0) fail_write("syncing it to the disk", errno);
      const int fd = std::exchange(fd_, -1);
      if (::close(fd) != 0) fail_write("closing it", errno);
      if (::renameat(folder_fd_, temporary_.c_str(), folder_fd_, name_.c_str()) != 0)
        fail_write(detail::concat("renaming it over '", name_, "' in '", folder_, "'"), errno);
      temporary_.clear();
      // The rename reaches the disk with the folder; folders that cannot be
      // synced (EINVAL) on some file systems are taken as they are.
      if (::fsync(folder_fd_) != 0 && errno != EINVAL && errno != ENOTSUP) {
        const int e = errno;
        close_all();
        fail(who_, ": '", path_, "' holds the new content, but syncing its folder '",
                     folder_, "' to the disk failed: ", std::strerror(e),
                     "; a crash now may bring back the old file");
      }
    } else if (kind_ == Kind::in_place) {
      const int fd = std::exchange(fd_, -1);
      if (::close(fd) != 0) fail_write("closing it", errno);
    }
    committed_ = true;
    close_all();
  }

  /// Instead of commit(): gives the unfinished temporary file the name
  /// `<target>.<suffix>` beside the target (replacing whatever has that
  /// name, and never writing through a link), for instance to keep a
  /// failed run's log for inspection. Returns whether it did; never throws.
  bool set_aside(const std::string& suffix) noexcept {
    if (kind_ != Kind::replace || fd_ < 0) return false;
    try {
      flush();
    } catch (...) {
      return false;  // flush() has removed the temporary file
    }
    const std::string aside = name_ + suffix;
    const bool moved = ::renameat(folder_fd_, temporary_.c_str(), folder_fd_, aside.c_str()) == 0;
    if (moved) temporary_.clear();
    discard();
    return moved;
  }

 private:
  OutputFile(std::string path, std::string who, OutputOptions options, bool probe)
      : path_(std::move(path)), who_(std::move(who)) {
    if (path_.empty()) fail_open("an empty file name");
    if (path_ == "-") {
      if (!options.standard_output)
        fail(who_, ": '-' (standard output) cannot hold this file; name a file");
      kind_ = Kind::standard_output;
      fd_ = STDOUT_FILENO;
      return;
    }
    resolve();
    struct stat info;
    const int links = by_kernel_ ? 0 : AT_SYMLINK_NOFOLLOW;
    const bool exists = ::fstatat(folder_fd_, name_.c_str(), &info, links) == 0;
    if (exists && S_ISDIR(info.st_mode)) fail_open(std::strerror(EISDIR));
    if (by_kernel_ || (exists && !S_ISREG(info.st_mode))) {
      kind_ = Kind::in_place;
      if (probe && !exists) fail_open(std::strerror(ENOENT));
      if (!probe) open_in_place();
      return;
    }
    open_temporary(exists ? &info : nullptr, options.append && !probe);
  }

  static constexpr std::size_t buffer_limit = std::size_t(1) << 16;
#ifdef O_PATH
  static constexpr int walk_flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
#else
  static constexpr int walk_flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
#endif

  static std::string join(const std::string& folder, const std::string& name) {
    return folder == "/" ? "/" + name : folder + "/" + name;
  }
  static std::string parent(const std::string& folder) {
    const auto slash = folder.find_last_of('/');
    return slash == 0 || slash == std::string::npos ? "/" : folder.substr(0, slash);
  }

  // Closes what is open, then throws.
  [[noreturn]] void fail_open(const std::string& reason) {
    close_all();
    fail(who_, ": cannot write '", path_, "': ", reason);
  }
  // A folder on the way to `spelled` (the path or a link's text) is missing
  // or may not be searched.
  [[noreturn]] void fail_folder(const std::string& spelled, int e) {
    const auto slash = spelled.find_last_of('/');
    std::string folder = slash == std::string::npos ? "." : spelled.substr(0, slash);
    if (folder.empty()) folder = "/";
    fail_open(detail::concat("its folder '", folder, "': ", std::strerror(e)));
  }
  // Removes the temporary file, then throws.
  [[noreturn]] void fail_write(const std::string& doing, int e) {
    discard();
    const char* left =
        kind_ == Kind::replace ? "the file is as it was" : "the output is incomplete";
    if (doing.empty())
      fail(who_, ": writing '", path_, "' failed after ", written_, " bytes: ",
                   std::strerror(e), "; ", left);
    fail(who_, ": writing '", path_, "' failed: ", doing, ": ", std::strerror(e), "; ",
                 left);
  }
  void check_open() const {
    if (committed_ || fd_ < 0)
      fail(who_, ": '", path_, "' is already closed (committed or failed)");
  }

  void open_in_place() {
    const int links = by_kernel_ ? 0 : O_NOFOLLOW;
    fd_ = ::openat(folder_fd_, name_.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC | links);
    if (fd_ < 0) fail_open(std::strerror(errno));
  }

  // Walks path_ as the kernel does, from one open folder to the next, so
  // that no link is followed unchecked: leaves the target's real folder
  // open as folder_fd_ (named folder_) and its name there in name_.
  void resolve() {
    std::string rest = path_, spelled = path_;  // spelled: the path, or the link's text
    start(rest);
    for (int links = 0;;) {
      const auto slash = rest.find('/');
      const bool last = slash == std::string::npos;
      const std::string name = rest.substr(0, slash);
      rest.erase(0, last ? rest.size() : slash + 1);
      struct stat info;
      if (name.empty() || name == "." || name == "..") {
        if (last) fail_open(std::strerror(EISDIR));
        if (name == "..") enter(name, spelled, parent(folder_));
      } else if (::fstatat(folder_fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
        if (!last) fail_folder(spelled, errno);
        if (errno != ENOENT) fail_open(std::strerror(errno));
        return found(name);
      } else if (!S_ISLNK(info.st_mode)) {
        if (last) return found(name);
        if (!S_ISDIR(info.st_mode)) fail_folder(spelled, ENOTDIR);
        enter(name, spelled, join(folder_, name));
      } else {
        if (++links > 40) fail_open(std::strerror(ELOOP));
        follow(name, info, last, rest, spelled);
        if (by_kernel_) return found(name);
      }
    }
  }
  // What /proc holds is the kernel's, never replaced: written in place.
  void found(const std::string& name) {
    name_ = name;
    by_kernel_ = detail::in_proc(folder_fd_);
  }

  // Starts the walk of `rest` at "/" (dropping its leading slashes) or at
  // the working folder.
  void start(std::string& rest) {
    const bool absolute = rest[0] == '/';
    const int fd = ::open(absolute ? "/" : ".", walk_flags);
    char* working = absolute ? nullptr : ::getcwd(nullptr, 0);
    if (fd < 0 || (!absolute && !working)) {
      const int e = errno;
      if (fd >= 0) ::close(fd);
      fail_open(detail::concat("the working folder: ", std::strerror(e)));
    }
    folder_ = absolute ? "/" : working;
    std::free(working);
    if (folder_fd_ >= 0) ::close(folder_fd_);
    folder_fd_ = fd;
    if (absolute) rest.erase(0, rest.find_first_not_of('/'));
  }

  // Goes from folder_ into its entry `name`, whose real path is `real`.
  void enter(const std::string& name, const std::string& spelled, std::string real,
             bool follow = false) {
    const int fd = ::openat(folder_fd_, name.c_str(), walk_flags | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0) fail_folder(spelled, errno);
    ::close(folder_fd_);
    folder_fd_ = fd;
    folder_ = std::move(real);
  }

  // Follows the link `name` in folder_ once checked: one in /proc through
  // the kernel (the last one is left to open), any other by putting its
  // text before the rest of the path.
  void follow(const std::string& name, const struct stat& link, bool last, std::string& rest,
              std::string& spelled) {
    struct stat folder;
    if (::fstat(folder_fd_, &folder) != 0) fail_folder(spelled, errno);
    if (!detail::may_follow(link, folder))
      fail_open(detail::concat("the symbolic link '", join(folder_, name), "' belongs to uid ",
                               link.st_uid, ", neither you (uid ", ::geteuid(),
                               ") nor the owner of its sticky world-writable folder (uid ",
                               folder.st_uid, "), and such a link is not followed (the rule of ",
                               "the kernel's fs.protected_symlinks)"));
    char text[4096];
    const ssize_t n = ::readlinkat(folder_fd_, name.c_str(), text, sizeof text);
    if (n <= 0 || std::size_t(n) >= sizeof text)
      fail_open(detail::concat("reading the symbolic link '", join(folder_, name), "' failed"));
    const std::string to(text, std::size_t(n));
    if (detail::in_proc(folder_fd_)) {
      if (last)
        by_kernel_ = true;
      else
        enter(name, spelled, to[0] == '/' ? to : join(folder_, to), true);
      return;
    }
    if (last) spelled = to[0] == '/' ? to : join(folder_, to);
    rest = last ? to : to + "/" + rest;
    if (to[0] == '/') start(rest);
  }

  // A regular file that exists (`target`), or nothing yet.
  void open_temporary(const struct stat* target, bool append) {
    kind_ = Kind::replace;
    const bool exists = target != nullptr;
    if (exists && ::faccessat(folder_fd_, name_.c_str(), W_OK, AT_EACCESS) != 0)
      fail_open(std::strerror(errno));
    // The walk's handle may only name the folder (O_PATH); this one syncs.
    const int folder = ::openat(folder_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder < 0)
      fail_open(detail::concat("its folder '", folder_, "': ", std::strerror(errno)));
    ::close(folder_fd_);
    folder_fd_ = folder;
    std::random_device entropy;
    std::mt19937_64 bits((std::uint64_t(entropy()) << 32) ^ entropy());
    for (int attempt = 0; fd_ < 0; ++attempt) {
      char tag[17];
      std::snprintf(tag, sizeof tag, "%016llx", static_cast<unsigned long long>(bits()));
      temporary_ = "." + name_.substr(0, 200) + "." + tag + ".tmp";
      fd_ = ::openat(folder_fd_, temporary_.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd_ >= 0) break;
      if (errno == EEXIST && attempt < 100) continue;
      const int e = errno;
      temporary_.clear();
      fail_open(detail::concat("creating a temporary file in '", folder_, "': ",
                               std::strerror(e)));
    }
    if (exists) {
      // The owner first: changing it may clear set-id bits that fchmod restores.
      if (target->st_uid != ::geteuid() || target->st_gid != ::getegid())
        (void)::fchown(fd_, target->st_uid, target->st_gid);  // allowed for root only
      if (::fchmod(fd_, target->st_mode & 07777) != 0) fail_write("keeping its permissions", errno);
    }
    if (append && exists) copy_existing();
  }

  void copy_existing() {
    const int in = ::openat(folder_fd_, name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) fail_write("reading what it holds", errno);
    char chunk[1 << 14];
    for (;;) {
      const ssize_t n = ::read(in, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(in);
        fail_write("reading what it holds", e);
      }
      if (n == 0) break;
      buffer_.append(chunk, std::size_t(n));
      if (buffer_.size() >= buffer_limit) {
        try {
          flush();
        } catch (...) {
          ::close(in);
          throw;
        }
      }
    }
    ::close(in);
  }

  void close_all() noexcept {
    if (fd_ >= 0 && kind_ != Kind::standard_output) ::close(fd_);
    fd_ = -1;
    if (folder_fd_ >= 0) ::close(folder_fd_);
    folder_fd_ = -1;
    buffer_.clear();
  }
  void discard() noexcept {
    if (kind_ == Kind::replace && !temporary_.empty() && folder_fd_ >= 0)
      ::unlinkat(folder_fd_, temporary_.c_str(), 0);
    temporary_.clear();
    close_all();
  }

  std::string path_, who_;
  Kind kind_ = Kind::replace;
  int fd_ = -1;
  int folder_fd_ = -1;
  std::string folder_, name_, temporary_;
  std::string buffer_;
  std::size_t written_ = 0;
  bool committed_ = false;
  bool by_kernel_ = false;  // the target is in /proc: written in place, its link followed there
};

/// Writes `bytes` to `path` through an OutputFile and commits it.
/// Blocking; throws gradsum::Error naming `who` on any failure, leaving
/// the target as it was.
inline void write_output(const std::string& path, const std::string& bytes,
                         const std::string& who, OutputOptions options = {}) {
  OutputFile out(path, who, options);
  out.write(bytes);
  out.commit();
}

}  // namespace gradsum
