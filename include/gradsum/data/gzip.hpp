// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading text files, gzip-compressed or not, as a stream: a file is read
/// (and decompressed through zlib) 64 KiB at a time, so a reader holds one
/// chunk of its text, never the whole. zlib is used when gradsum was
/// configured with it (GRADSUM_ENABLE_ZLIB, on by default: CMake finds
/// zlib and links it into the gradsum target, the installed package finds
/// it again for consumers). Without zlib a compressed file is an error
/// that says so.

#include <gradsum/config.hpp>
#include <gradsum/core/error.hpp>

#if GRADSUM_ENABLE_ZLIB
#include <zlib.h>
#endif

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <streambuf>
#include <string>
#include <system_error>
#include <vector>

namespace gradsum {
namespace detail {

/// Whether the file at `path` starts with the gzip magic bytes 1f 8b.
inline bool is_gzip_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char magic[2] = {0, 0};
  const std::size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

/// The text of the file at `path` as a stream buffer, decompressed when the
/// file starts with the gzip magic bytes (whatever its name; concatenated
/// members included). Throws gradsum::Error naming the file when it cannot
/// be opened or read, its gzip data is corrupted or truncated (when the
/// reading gets there), or gradsum was built without zlib.
class TextFileBuffer : public std::streambuf {
 public:
  explicit TextFileBuffer(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) cannot_open(EISDIR);
    const bool gzip = is_gzip_file(path);
    errno = 0;
    if (!gzip) {
      file_ = std::fopen(path.c_str(), "rb");
      if (!file_) cannot_open(errno);
      return;
    }
#if GRADSUM_ENABLE_ZLIB
    gz_ = gzopen(path.c_str(), "rb");
    if (!gz_) cannot_open(errno);
#else
    fail(path, ": the file is gzip-compressed, but gradsum was configured without zlib "
         "(GRADSUM_ENABLE_ZLIB=OFF); decompress it first");
#endif
  }
  TextFileBuffer(const TextFileBuffer&) = delete;
  TextFileBuffer& operator=(const TextFileBuffer&) = delete;
  ~TextFileBuffer() override {
    if (file_) std::fclose(file_);
#if GRADSUM_ENABLE_ZLIB
    if (gz_) gzclose(gz_);
#endif
  }

  /// Bytes of text (decompressed) read so far.
  std::uint64_t bytes_read() const { return bytes_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t n = file_ ? read_plain() : read_gzip();
    bytes_ += n;
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return n == 0 ? traits_type::eof() : traits_type::to_int_type(buffer_[0]);
  }

 private:
  [[noreturn]] void cannot_open(int err) const {
    fail(path_, ": cannot open for reading: ",
         err != 0 ? std::generic_category().message(err) : std::string("unknown reason"));
  }
  std::size_t read_plain() {
    errno = 0;
    const std::size_t n = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    if (n == 0 && std::ferror(file_))
      fail(path_, ": reading failed after ", bytes_, " bytes: ",
           std::generic_category().message(errno != 0 ? errno : EIO));
    return n;
  }
  std::size_t read_gzip() {
#if GRADSUM_ENABLE_ZLIB
    const int n = gzread(gz_, buffer_.data(), unsigned(buffer_.size()));
    if (n > 0) return std::size_t(n);
    int code = Z_OK;
    const char* message = gzerror(gz_, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END))
      fail(path_, ": the gzip data is corrupted or truncated after ", bytes_,
           " decompressed bytes (zlib: ", message ? message : "", ")");
#endif
    return 0;
  }

  std::string path_;
  std::FILE* file_ = nullptr;
#if GRADSUM_ENABLE_ZLIB
  gzFile gz_ = nullptr;
#endif
  std::vector<char> buffer_ = std::vector<char>(std::size_t(1) << 16);
  std::uint64_t bytes_ = 0;
};

}  // namespace detail

/// The most bytes of text `read_text_file` returns unless told otherwise:
/// 2^30, 1 GiB.
constexpr std::uint64_t default_max_text_bytes = std::uint64_t(1) << 30;

/// The whole text of the file at `path`, decompressed when it is
/// gzip-compressed (see detail::TextFileBuffer). Throws gradsum::Error
/// naming the file when it cannot be read, or as soon as its text exceeds
/// `max_bytes` (a gzip file can expand a thousandfold): the table readers
/// (read_csv, read_libsvm) stream instead and hold no text.
inline std::string read_text_file(const std::string& path,
                                  std::uint64_t max_bytes = default_max_text_bytes) {
  detail::TextFileBuffer in(path);
  std::string text;
  char chunk[1 << 16];
  std::streamsize n = 0;
  while ((n = in.sgetn(chunk, sizeof chunk)) > 0) {
    if (text.size() + std::size_t(n) > max_bytes)
      fail(path, ": the text exceeds ", max_bytes, " bytes (after decompression); "
                   "read_text_file's max_bytes bounds it: raise it to read a longer text");
    text.append(chunk, std::size_t(n));
  }
  return text;
}

}  // namespace gradsum
