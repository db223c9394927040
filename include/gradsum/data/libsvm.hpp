// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading LIBSVM / SVMlight sparse text files into dense host Tables.

#include <gradsum/core/error.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/gzip.hpp>
#include <gradsum/data/lines.hpp>

#include <cmath>
#include <cstdint>
#include <istream>
#include <new>
#include <string>
#include <string_view>
#include <utility>
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
  /// rows suit moderate widths only. Checked after every line, so the
  /// sparse entries read (at most as many) stay within it too.
  std::int64_t max_values = default_max_values;
  /// The longest line accepted, in bytes.
  std::int64_t max_line_bytes = default_max_line_bytes;
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
/// num_classes, a non-finite value (unless allowed); `source:line: ` for a
/// line longer than max_line_bytes, a table beyond max_values (as soon as
/// a line takes it there) or memory running out; `source: ` for an empty
/// file. The text is read in chunks, never held whole.
Table parse_libsvm(std::istream& in, const std::string& source, const LibsvmOptions& options = {});

/// Opens the file at `path` (gzip-compressed or not, decompressed as it is
/// read) and parses it as `parse_libsvm` does, with `path` as the source
/// name.
Table read_libsvm(const std::string& path, const LibsvmOptions& options = {});

namespace detail {

/// One parse_libsvm call: the sparse entries read so far, made dense at
/// the end.
class LibsvmReader {
 public:
  LibsvmReader(const std::string& source, const LibsvmOptions& options)
      : source_(source), options_(options), width_(options.num_features) {
    if (options.num_features < 0)
      fail(source, ": num_features ", options.num_features,
           " is invalid (expected 0 to infer it, or a positive width)");
    if (options.num_classes < 0)
      fail(source, ": num_classes ", options.num_classes,
           " is invalid (expected 0, or the number of classes)");
    check_read_limits(source, "LibsvmOptions", options.max_values, options.max_line_bytes);
    table_.source = source;
  }

  Table read(std::streambuf* in) {
    LineReader lines(in, source_, options_.max_line_bytes, "LibsvmOptions");
    try {
      std::string_view view;
      while (lines.next(view)) {
        line_ = lines.line_number();
        read_line(view);
      }
      if (table_.targets.empty()) fail(source_, ": no data rows");
      return dense();
    } catch (const std::bad_alloc&) {
      out_of_memory(source_, line_, table_.targets.size(), std::size_t(width_),
                    "LibsvmOptions");
    }
  }

 private:
  struct Entry {
    std::int64_t row, index;
    double value;
  };

  std::string where(std::size_t column) const {
    return concat(source_, ':', line_, ':', column, ": ");
  }
  double number(std::string_view text, std::size_t column) {
    double v = 0;
    const auto status = parse_csv_number(text, buffer_, v);
    if (status == CsvNumber::non_finite && options_.allow_nonfinite) return v;
    if (status != CsvNumber::ok) csv_field_error(source_, line_, column, text, status);
    return v;
  }

  void read_line(std::string_view view) {
    const auto hash = view.find('#');
    if (hash != std::string_view::npos) view = view.substr(0, hash);
    csv_split(view, ' ', fields_);
    if (!fields_.empty() && fields_.back() == "\r") fields_.pop_back();
    if (!fields_.empty() && !fields_.back().empty() && fields_.back().back() == '\r')
      fields_.back().remove_suffix(1);
    if (fields_.empty()) return;
    const double label = number(fields_[0], 1);
    const int classes = options_.num_classes;
    if (classes > 0 && !(label >= 0 && label < classes && label == std::floor(label)))
      fail(where(1), "label ", quote_text(fields_[0]), " is out of range for ", classes,
           " classes (expected an integer in [0, ", classes, "))");
    const auto row = std::int64_t(table_.targets.size());
    table_.targets.push_back(label);
    std::int64_t previous = first_index() - 1;
    for (std::size_t k = 1; k < fields_.size(); ++k) previous = read_pair(row, k, previous);
    check_table_size(source_, line_, row + 1, width_ > 0 ? width_ : 1, 0, options_.max_values,
                     "LibsvmOptions");
  }

  // Reads field k, `index:value`, of row `row`; returns its index.
  std::int64_t read_pair(std::int64_t row, std::size_t k, std::int64_t previous) {
    const std::string_view pair = fields_[k];
    const auto colon = pair.find(':');
    if (colon == std::string_view::npos)
      fail(where(k + 1), "expected INDEX:VALUE, got ", quote_text(pair));
    const std::string_view index_text = pair.substr(0, colon);
    std::int64_t index = 0;
    bool digits = !index_text.empty() && index_text.size() <= 18;
    for (char c : index_text) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) index = index * 10 + (c - '0');
    }
    if (!digits || index < first_index())
      fail(where(k + 1), "feature index ", quote_text(index_text), " is not an integer >= ",
           first_index());
    if (index <= previous)
      fail(where(k + 1), "feature index ", index, " does not follow the previous index ",
           previous, " (indices must increase along a line)");
    if (options_.num_features > 0 && index - first_index() >= options_.num_features)
      fail(where(k + 1), "feature index ", index, " is beyond the ", options_.num_features,
           " features expected");
    const double value = number(pair.substr(colon + 1), k + 1);
    entries_.push_back({row, index - first_index(), value});
    if (options_.num_features == 0 && index - first_index() + 1 > width_)
      width_ = index - first_index() + 1;
    return index;
  }

  Table dense() {
    if (width_ == 0) width_ = 1;  // only labels: one feature, all zeros
    table_.num_rows = table_.targets.size();
    table_.num_features = std::size_t(width_);
    table_.features.assign(table_.num_rows * table_.num_features, 0.0);
    for (const auto& e : entries_)
      table_.features[std::size_t(e.row * width_ + e.index)] = e.value;
    return std::move(table_);
  }

  std::int64_t first_index() const { return options_.zero_based ? 0 : 1; }

  const std::string& source_;
  const LibsvmOptions& options_;
  Table table_;
  std::int64_t width_;
  std::vector<Entry> entries_;
  std::vector<std::string_view> fields_;
  std::string buffer_;  // parse_csv_number's scratch
  std::size_t line_ = 0;
};

}  // namespace detail

inline Table parse_libsvm(std::istream& in, const std::string& source,
                          const LibsvmOptions& options) {
  return detail::LibsvmReader(source, options).read(in.rdbuf());
}

inline Table read_libsvm(const std::string& path, const LibsvmOptions& options) {
  detail::LibsvmReader reader(path, options);
  detail::TextFileBuffer text(path);
  return reader.read(&text);
}

}  // namespace gradsum
