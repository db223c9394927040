// SPDX-License-Identifier: Apache-2.0
#pragma once

// How the fuzz targets read their input bytes, shared with the seed writer
// so that the seeds it writes are inputs the targets understand.

#include <gradsum/data/csv.hpp>
#include <gradsum/data/libsvm.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace gradsum_fuzz {

/// Stops the run with a message: an invariant of a parser's result failed.
/// libFuzzer reports the abort as a crash and keeps the input.
[[noreturn]] inline void broken(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: invariant broken: %s\n", target, what.c_str());
  std::abort();
}

/// Parses `data` (byte 0 chooses the options) with `parse`; returns false if
/// it threw gradsum::Error, whose message must start with `source:`. Any
/// other exception escapes, which libFuzzer reports.
template <class Parse>
bool parse_table(const char* target, const std::uint8_t* data, std::size_t size,
                 const std::string& source, Parse parse, gradsum::Table& table) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  try {
    table = parse(in, source);
  } catch (const gradsum::Error& e) {
    if (std::string(e.what()).rfind(source + ":", 0) != 0)
      broken(target, std::string("message does not name the source: ") + e.what());
    return false;
  }
  return true;
}

/// What every table a reader accepts must satisfy: rows and features,
/// storage of the right size, finite values unless allowed, labels in range
/// when classes are asked for.
inline void check_table(const char* target, const gradsum::Table& t, bool allow_nonfinite,
                        int num_classes) {
  if (t.num_rows == 0 || t.num_features == 0) broken(target, "empty table accepted");
  if (t.features.size() != t.num_rows * t.num_features || t.targets.size() != t.num_rows)
    broken(target, "storage does not match num_rows x num_features");
  for (double v : t.features)
    if (!allow_nonfinite && !std::isfinite(v)) broken(target, "non-finite feature");
  for (double y : t.targets) {
    if (!allow_nonfinite && !std::isfinite(y)) broken(target, "non-finite target");
    if (num_classes > 0 && !(y >= 0 && y < num_classes && y == std::floor(y)))
      broken(target, "label out of range accepted");
  }
  const double last = t.feature(t.num_rows - 1, t.num_features - 1);
  if (std::memcmp(&last, &t.features.back(), sizeof last) != 0)
    broken(target, "Table::feature disagrees with the storage");
}

/// CSV and LIBSVM inputs: byte 0 chooses the reader's options, the rest is
/// the file's text. For CSV, bits 0-1 pick the header mode (automatic,
/// present, absent, automatic), bits 2-3 the delimiter (',', ' ', ';',
/// '\t'), bit 4 allow_nonfinite, bit 5 num_classes 3 (else 0), bits 6-7 the
/// target column (-1, 0, 1, 2).
inline gradsum::CsvOptions csv_options(std::uint8_t b) {
  static const gradsum::Header headers[] = {gradsum::Header::automatic, gradsum::Header::present,
                                            gradsum::Header::absent, gradsum::Header::automatic};
  static const char delimiters[] = {',', ' ', ';', '\t'};
  gradsum::CsvOptions o;
  o.header = headers[b & 3];
  o.delimiter = delimiters[(b >> 2) & 3];
  o.allow_nonfinite = (b >> 4) & 1;
  o.num_classes = (b >> 5) & 1 ? 3 : 0;
  o.target_column = int((b >> 6) & 3) - 1;
  return o;
}

/// For LIBSVM, bit 0 zero_based, bit 1 allow_nonfinite, bit 2 num_classes 2
/// (else 0), bits 3-4 num_features (0 = inferred, 3, 10, 100). The dense
/// table is capped at 2^20 values (LibsvmOptions::max_values), so that a
/// line such as "1 100000000:1" tests the cap instead of the machine's memory.
inline gradsum::LibsvmOptions libsvm_options(std::uint8_t b) {
  static const std::int64_t widths[] = {0, 3, 10, 100};
  gradsum::LibsvmOptions o;
  o.zero_based = b & 1;
  o.allow_nonfinite = (b >> 1) & 1;
  o.num_classes = (b >> 2) & 1 ? 2 : 0;
  o.num_features = widths[(b >> 3) & 3];
  o.max_values = std::int64_t(1) << 20;
  return o;
}

/// gradsum-train arguments: the input split at NUL bytes, one argument each.
inline std::vector<std::string> split_args(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  if (size == 0) return args;
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += char(data[i]);
    }
  }
  args.push_back(current);
  return args;
}

/// The inverse of split_args.
inline std::string join_args(const std::vector<std::string>& args) {
  std::string out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out += '\0';
    out += args[i];
  }
  return out;
}

}  // namespace gradsum_fuzz
