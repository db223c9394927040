// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading LIBSVM / SVMlight sparse text files into dense host Tables.

#include <gradsum/core/error.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/gzip.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <istream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gradsum {

/// How `read_libsvm` and `parse_libsvm` interpret a file.
struct LibsvmOptions {
  /// Number of features (columns of the dense rows); 0 takes the largest
  /// index in the file. A larger index is an error.
  std::int64_t num_features = 0;
  /// Whether feature indices start at 0 (default: at 1, as LIBSVM's).
  bool zero_based = false;
  /// With C > 0, every label must be an integer class in [0, C).
  int num_classes = 0;
  /// Accept NaN and infinite values (rejected by default).
  bool allow_nonfinite = false;
  /// The most values the dense table may hold (rows x features): dense
  /// rows suit moderate widths only.
  std::int64_t max_values = std::int64_t(1) << 28;
};

/// Parses LIBSVM text from `in`: one sample per line,
/// `label index:value index:value …` with increasing indices; features not
/// listed are 0; `#` starts a comment; blank lines are skipped. The result
/// is a dense row-major Table whose target is the label.
///
/// Errors throw gradsum::Error starting with `source:line:column: ` where
/// the column is the number of the whitespace-separated field (the label
/// is field 1): a non-numeric label or value, a pair without a colon, an
/// index that is not an integer >= 1 (>= 0 when zero_based), indices that
/// do not increase, an index beyond num_features, a label out of range for
/// num_classes, a non-finite value (unless allowed); `source: ` for an
/// empty file or a table too large to hold densely.
inline Table parse_libsvm(std::istream& in, const std::string& source,
                          const LibsvmOptions& options = {}) {
  if (options.num_features < 0)
    detail::fail(source, ": num_features ", options.num_features,
                 " is invalid (expected 0 to infer it, or a positive width)");
  if (options.num_classes < 0)
    detail::fail(source, ": num_classes ", options.num_classes,
                 " is invalid (expected 0, or the number of classes)");
  struct Entry {
    std::int64_t row, index;
    double value;
  };
  std::vector<Entry> entries;
  Table table;
  table.source = source;
  std::int64_t width = options.num_features;
  std::string line, buffer;
  std::size_t line_number = 0;
  const std::int64_t first_index = options.zero_based ? 0 : 1;
  while (std::getline(in, line)) {
    ++line_number;
    std::string_view view(line);
    const auto hash = view.find('#');
    if (hash != std::string_view::npos) view = view.substr(0, hash);
    std::vector<std::string_view> fields;
    detail::csv_split(view, ' ', fields);
    if (!fields.empty() && fields.back() == "\r") fields.pop_back();
    if (!fields.empty() && !fields.back().empty() && fields.back().back() == '\r')
      fields.back().remove_suffix(1);
    if (fields.empty()) continue;
    auto where = [&](std::size_t column) {
      return detail::concat(source, ':', line_number, ':', column, ": ");
    };
    auto number = [&](std::string_view text, std::size_t column) {
      double v = 0;
      const auto status = detail::parse_csv_number(text, buffer, v);
      if (status == detail::CsvNumber::non_finite && options.allow_nonfinite) return v;
      if (status != detail::CsvNumber::ok)
        detail::csv_field_error(source, line_number, column, text, status);
      return v;
    };
    const double label = number(fields[0], 1);
    if (options.num_classes > 0 &&
        !(label >= 0 && label < options.num_classes && label == std::floor(label)))
      detail::fail(where(1), "label ", detail::csv_quote(fields[0]), " is out of range for ",
                   options.num_classes, " classes (expected an integer in [0, ",
                   options.num_classes, "))");
    const auto row = std::int64_t(table.targets.size());
    table.targets.push_back(label);
    std::int64_t previous = first_index - 1;
    for (std::size_t k = 1; k < fields.size(); ++k) {
      const std::string_view pair = fields[k];
      const auto colon = pair.find(':');
      if (colon == std::string_view::npos)
        detail::fail(where(k + 1), "expected INDEX:VALUE, got ", detail::csv_quote(pair));
      const std::string_view index_text = pair.substr(0, colon);
      std::int64_t index = 0;
      bool digits = !index_text.empty() && index_text.size() <= 18;
      for (char c : index_text) {
        digits = digits && c >= '0' && c <= '9';
        if (digits) index = index * 10 + (c - '0');
      }
      if (!digits || index < first_index)
        detail::fail(where(k + 1), "feature index ", detail::csv_quote(index_text),
                     " is not an integer >= ", first_index);
      if (index <= previous)
        detail::fail(where(k + 1), "feature index ", index,
                     " does not follow the previous index ", previous,
                     " (indices must increase along a line)");
      if (options.num_features > 0 && index - first_index >= options.num_features)
        detail::fail(where(k + 1), "feature index ", index, " is beyond the ",
                     options.num_features, " features expected");
      previous = index;
      const double value = number(pair.substr(colon + 1), k + 1);
      entries.push_back({row, index - first_index, value});
      if (options.num_features == 0 && index - first_index + 1 > width)
        width = index - first_index + 1;
    }
  }
  if (in.bad()) detail::fail(source, ": reading failed");
  if (table.targets.empty()) detail::fail(source, ": no data rows");
  if (width == 0) width = 1;  // only labels: one feature, all zeros
  const auto rows = std::int64_t(table.targets.size());
  if (rows > options.max_values / width)
    detail::fail(source, ": ", rows, " rows x ", width, " features exceed the ",
                 options.max_values, " values a dense table may hold here (max_values)");
  table.num_rows = std::size_t(rows);
  table.num_features = std::size_t(width);
  table.features.assign(std::size_t(rows * width), 0.0);
  for (const auto& e : entries) table.features[std::size_t(e.row * width + e.index)] = e.value;
  return table;
}

/// Opens the file at `path` (gzip-compressed or not) and parses it as
/// `parse_libsvm` does, with `path` as the source name.
inline Table read_libsvm(const std::string& path, const LibsvmOptions& options = {}) {
  if (detail::is_gzip_file(path)) {
    std::istringstream text(detail::read_gzip(path));
    return parse_libsvm(text, path, options);
  }
  errno = 0;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int err = errno;
    detail::fail(path, ": cannot open for reading: ",
                 err != 0 ? std::generic_category().message(err) : std::string("unknown reason"));
  }
  return parse_libsvm(file, path, options);
}

}  // namespace gradsum
