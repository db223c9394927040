// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What one input may cost the table readers, and the line reader they
/// share: text is read 64 KiB at a time and never held whole, so a reader's
/// memory is its table plus one line, and both are bounded (the limits
/// below, fields of CsvOptions and LibsvmOptions).

#include <gradsum/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ios>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace gradsum {

/// The most feature values (rows x features, 8 bytes each) a table read
/// from a file may hold unless its options say otherwise: 2^28, 2 GiB.
constexpr std::int64_t default_max_values = std::int64_t(1) << 28;

/// The longest line (in bytes, after decompression) a table reader accepts
/// unless its options say otherwise: 2^24, 16 MiB.
constexpr std::int64_t default_max_line_bytes = std::int64_t(1) << 24;

namespace detail {

/// Checks a reader's two limits (named after `options`, "CsvOptions").
inline void check_read_limits(const std::string& source, const char* options,
                              std::int64_t max_values, std::int64_t max_line_bytes) {
  if (max_values < 1)
    fail(source, ": ", options, "::max_values ", max_values, " is invalid (expected a "
         "positive number of values)");
  if (max_line_bytes < 1)
    fail(source, ": ", options, "::max_line_bytes ", max_line_bytes, " is invalid (expected "
         "a positive number of bytes)");
}

/// Throws unless `rows` rows of `features` features, plus `extra` values'
/// worth of class names, fit in `max_values`; `line` is the line that
/// would add the last row. Called before the table grows.
inline void check_table_size(const std::string& source, std::size_t line, std::int64_t rows,
                             std::int64_t features, std::int64_t extra,
                             std::int64_t max_values, const char* options) {
  if (extra <= max_values && rows <= (max_values - extra) / (features > 0 ? features : 1))
    return;
  fail(source, ':', line, ": ", rows, " rows x ", features, " features",
       extra > 0 ? concat(" and class names worth ", extra, " values") : std::string(),
       " exceed the ", max_values, " values a table may hold (", options,
       "::max_values, 8 bytes a value; raise it to read a larger table)");
}

/// The error for a std::bad_alloc while reading: where it happened and how
/// much the table held, instead of a bare "std::bad_alloc".
[[noreturn]] inline void out_of_memory(const std::string& source, std::size_t line,
                                       std::size_t rows, std::size_t features,
                                       const char* options) {
  fail(source, ':', line, ": out of memory while reading, holding ", rows, " rows x ",
       features, " features (", rows * (features + 1) * sizeof(double), " bytes of values); "
       "lower ", options, "::max_values so that such a file is refused before memory runs out");
}

/// Cuts the text of a stream buffer into lines, reading it 64 KiB at a
/// time: memory is one chunk plus the longest line, which must not exceed
/// `max_line_bytes`. Errors name `source` and the line.
class LineReader {
 public:
  LineReader(std::streambuf* in, const std::string& source, std::int64_t max_line_bytes,
             const char* options)
      : in_(in), source_(source), max_(std::size_t(max_line_bytes)), options_(options) {
    if (!in_) fail(source_, ": the stream has no buffer to read from");
  }

  /// The next line without its '\n' (a '\r' before it stays), valid until
  /// the next call; false at the end of the text.
  bool next(std::string_view& line) {
    long_line_.clear();
    for (;;) {
      if (begin_ == end_ && !fill()) {
        if (long_line_.empty()) return false;  // nothing after the last '\n'
        return found(long_line_, line);
      }
      const char* start = buffer_.data() + begin_;
      const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
      const std::size_t n = newline ? std::size_t(newline - start) : end_ - begin_;
      if (long_line_.size() + n > max_)
        fail(source_, ':', number_ + 1, ": the line is longer than ", max_, " bytes (",
             options_, "::max_line_bytes; raise it to read longer lines)");
      begin_ += n + (newline ? 1 : 0);
      if (newline && long_line_.empty()) return found(std::string_view(start, n), line);
      long_line_.append(start, n);
      if (newline) return found(long_line_, line);
    }
  }

  /// The 1-based number of the line `next` gave last.
  std::size_t line_number() const { return number_; }

 private:
  bool found(std::string_view text, std::string_view& line) {
    line = text;
    ++number_;
    return true;
  }
  bool fill() {
    std::streamsize got = 0;
    try {
      got = in_->sgetn(buffer_.data(), std::streamsize(buffer_.size()));
    } catch (const std::ios_base::failure& e) {  // std::filebuf on a failing disk
      fail(source_, ": read error after line ", number_, " (", e.what(), ")");
    }
    begin_ = 0;
    end_ = got > 0 ? std::size_t(got) : 0;
    return end_ > 0;
  }

  std::streambuf* in_;
  const std::string& source_;
  std::size_t max_;
  const char* options_;
  std::vector<char> buffer_ = std::vector<char>(std::size_t(1) << 16);
  std::size_t begin_ = 0, end_ = 0;
  std::string long_line_;  // a line that spans chunks
  std::size_t number_ = 0;
};

}  // namespace detail
}  // namespace gradsum
