// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading gzip-compressed text files through zlib, when gradsum was
/// configured with it (GRADSUM_ENABLE_ZLIB, on by default: CMake finds
/// zlib and links it into the gradsum target, the installed package finds
/// it again for consumers). Without zlib a compressed file is an error
/// that says so.

#include <gradsum/config.hpp>
#include <gradsum/core/error.hpp>

#if GRADSUM_ENABLE_ZLIB
#include <zlib.h>
#endif

#include <cstdio>
#include <string>

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

/// The decompressed contents of the gzip file at `path` (concatenated
/// members included). Throws gradsum::Error naming the file when it
/// cannot be opened, is corrupted or truncated, or gradsum was built
/// without zlib.
inline std::string read_gzip(const std::string& path) {
#if GRADSUM_ENABLE_ZLIB
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open for reading");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) text.append(buffer, std::size_t(n));
  int code = Z_OK;
  const char* message = gzerror(f, &code);
  const std::string reason = message ? message : "";
  gzclose(f);
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END))
    fail(path, ": the gzip data is corrupted or truncated after ", text.size(),
         " decompressed bytes (zlib: ", reason, ")");
  return text;
#else
  fail(path, ": the file is gzip-compressed, but gradsum was configured without zlib "
       "(GRADSUM_ENABLE_ZLIB=OFF); decompress it first");
#endif
}

}  // namespace detail

/// The whole contents of the text file at `path`, decompressed when it is
/// gzip-compressed. Throws gradsum::Error naming the file when it cannot be
/// read.
inline std::string read_text_file(const std::string& path) {
  if (detail::is_gzip_file(path)) return detail::read_gzip(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) detail::fail(path, ": cannot open for reading");
  std::string text;
  char buffer[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) detail::fail(path, ": reading failed");
  return text;
}

}  // namespace gradsum
