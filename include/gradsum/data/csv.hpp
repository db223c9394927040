// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading numeric tables (features plus one target column, which may hold
/// class names) from delimited text files on the host.

#include <gradsum/core/error.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/gzip.hpp>
#include <gradsum/data/lines.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <istream>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsum {

/// A rule every numeric target must follow, and what it expects (for the
/// message): `{[](double y) { return y >= 0 && y <= 1; }, "a probability in
/// [0, 1]"}`. Without `accepts`, any target the other options allow.
struct TargetRule {
  /// Whether target `y` is valid (a loss's `is_valid_target`, say).
  std::function<bool(double)> accepts;
  /// What a valid target is, completing "expected ...".
  std::string expected;
};

/// Whether the first non-blank line of a table is a header row.
enum class Header {
  /// The first non-blank line is a header iff one of its fields is empty or
  /// not a number (a field that parses to NaN or infinity counts as a
  /// number, so it is read as data and rejected as non-finite).
  automatic,
  /// The first non-blank line is a header, whatever it holds.
  present,
  /// There is no header: the first non-blank line is data.
  absent
};

/// How `read_csv` and `parse_csv` split and interpret a file.
struct CsvOptions {
  /// Whether the first non-blank line is a header row.
  Header header = Header::automatic;
  /// The field separator. `' '` means that any run of spaces and tabs
  /// separates fields and leading or trailing whitespace is ignored. Line
  /// breaks and characters that can occur in a number (digits, `.`, `+`,
  /// `-`, `e`, `E`) are rejected.
  char delimiter = ',';
  /// Index (0-based) of the column that holds the target; -1 is the last
  /// column. Other negative values are an error.
  int target_column = -1;
  /// Accept NaN and infinite values ("nan", "inf") instead of rejecting
  /// them, for data whose gaps a later step handles (the step's non-finite
  /// guard then reports them).
  bool allow_nonfinite = false;
  /// When > 0, every target must be a class label: an integer in
  /// [0, num_classes).
  int num_classes = 0;
  /// Accept class names in the target column. If its field on the first
  /// data row is not a number, every target is a name ("setosa"): the
  /// distinct names, sorted by their bytes, become the classes 0 … C-1 (so
  /// the mapping depends only on the set of names, not on the order of the
  /// rows) and Table::class_names lists them. A number among names, or a
  /// name among numbers, is an error naming its line, column and value.
  /// With Header::automatic the header is then recognized by the feature
  /// fields alone (a non-numeric target is no sign of a header). A name
  /// must be UTF-8 text without control characters (C0, DEL, C1): names
  /// are printed as they are, so none may steer a terminal.
  bool class_names = false;
  /// A rule every numeric target must follow, checked as the file is read
  /// so that a bad target is named by line and column (a class name is
  /// numbered, not checked).
  TargetRule target_rule;
  /// The most feature values (rows x features, 8 bytes each) the table may
  /// hold; a distinct class name of n bytes counts as 16 + n/8 of them.
  /// The row that would exceed it is an error, before memory is spent.
  std::int64_t max_values = default_max_values;
  /// The longest line accepted, in bytes (a line and its fields are held
  /// while read).
  std::int64_t max_line_bytes = default_max_line_bytes;
};

/// A numeric table read from a file: `num_rows` rows of `num_features`
/// features plus one target each.
struct Table {
  /// Number of data rows.
  std::size_t num_rows = 0;
  /// Number of feature columns (all columns but the target).
  std::size_t num_features = 0;
  /// Feature values, row-major, `num_rows * num_features` of them.
  std::vector<double> features;
  /// Target values, one per row.
  std::vector<double> targets;
  /// The trimmed fields of the header row if the file had one, else empty.
  /// It may have a different number of fields than the data rows (the CSVs
  /// shipped with scikit-learn start with a line such as
  /// `569,30,malignant,benign`).
  std::vector<std::string> header;
  /// Where the table came from: the file name, or the name given to
  /// `parse_csv`.
  std::string source;
  /// The class names of a target column of names (CsvOptions::class_names),
  /// in class order: target `k` stands for `class_names[k]`. Empty when the
  /// targets are numbers.
  std::vector<std::string> class_names;

  /// Feature `j` of row `i`. Throws gradsum::Error if `i >= num_rows` or
  /// `j >= num_features`.
  double feature(std::size_t i, std::size_t j) const;
};

/// Parses a delimited numeric table from `in`; `source_name` prefixes every
/// error message (use `"<string>"` for in-memory text).
///
/// Format: one row per line; `\n` or `\r\n` line endings; lines holding only
/// spaces and tabs are skipped; a UTF-8 byte order mark at the start is
/// ignored; fields are trimmed of surrounding spaces and tabs; there is no
/// quoting. Every field of a data row (but a target column of class names,
/// CsvOptions::class_names) must be a finite number (unless
/// CsvOptions::allow_nonfinite) that
/// `std::strtod` consumes completely (so parsing follows the C locale's
/// decimal point, as `strtod` does). The first data row fixes the number of
/// columns, which must be at least 2 (one or more features and the target).
///
/// Errors throw gradsum::Error with a message that starts with
/// `source:line:column: ` (1-based; the column is the field number) for a
/// bad field, `source:line: ` for a problem of a whole row (or a line
/// longer than CsvOptions::max_line_bytes, a table beyond
/// CsvOptions::max_values, memory running out) or `source: ` for the file
/// as a whole. A row with the wrong number of fields is reported at column
/// 1. The text is read in chunks, never held whole: memory is the table
/// plus one line. The work is linear in the size of the input.
Table parse_csv(std::istream& in, const std::string& source_name,
                const CsvOptions& options = {});

/// Opens the file at `path` and parses it as `parse_csv` does, with `path`
/// as the source name. A gzip-compressed file (it starts with the bytes
/// 1f 8b, whatever its name) is decompressed through zlib as it is read
/// (see data/gzip.hpp), so CsvOptions::max_values bounds what a small
/// file that expands a thousandfold may cost. Throws gradsum::Error naming
/// the path and the system's reason if the file cannot be opened or read.
Table read_csv(const std::string& path, const CsvOptions& options = {});

namespace detail {

/// What `parse_csv_number` found in a field.
enum class CsvNumber { ok, empty, not_numeric, non_finite, out_of_range };

/// Characters that may surround a field or, with delimiter `' '`, separate
/// fields.
inline bool csv_is_blank(char c) { return c == ' ' || c == '\t'; }

inline std::string_view csv_trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && csv_is_blank(s[b])) ++b;
  while (e > b && csv_is_blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

/// Splits `line` into trimmed fields (views into `line`), reusing `fields`.
inline void csv_split(std::string_view line, char delimiter,
                      std::vector<std::string_view>& fields) {
  fields.clear();
  if (delimiter == ' ') {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && csv_is_blank(line[i])) ++i;
      if (i == line.size()) break;
      const std::size_t start = i;
      while (i < line.size() && !csv_is_blank(line[i])) ++i;
      fields.push_back(line.substr(start, i - start));
    }
    return;
  }
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = line.find(delimiter, start);
    if (end == std::string_view::npos) {
      fields.push_back(csv_trim(line.substr(start)));
      return;
    }
    fields.push_back(csv_trim(line.substr(start, end - start)));
    start = end + 1;
  }
}

/// Parses a whole trimmed field with std::strtod. `buffer` is scratch
/// space, reused so that parsing does not allocate per field.
inline CsvNumber parse_csv_number(std::string_view field, std::string& buffer,
                                  double& value) {
  if (field.empty()) return CsvNumber::empty;
  // strtod would skip leading whitespace of other kinds (\v, \f, \n).
  if (std::isspace(static_cast<unsigned char>(field.front())))
    return CsvNumber::not_numeric;
  buffer.assign(field.data(), field.size());
  const char* begin = buffer.c_str();
  char* end = nullptr;
  errno = 0;
  value = std::strtod(begin, &end);
  const int err = errno;
  // An embedded NUL byte also stops strtod short of the end.
  if (end != begin + buffer.size()) return CsvNumber::not_numeric;
  if (!std::isfinite(value))
    return err == ERANGE ? CsvNumber::out_of_range : CsvNumber::non_finite;
  return CsvNumber::ok;
}

inline std::string csv_show_char(char c) { return quote_text(std::string_view(&c, 1)); }

inline void csv_check_options(const std::string& source,
                              const CsvOptions& options) {
  check_read_limits(source, "CsvOptions", options.max_values, options.max_line_bytes);
  if (options.target_column < -1)
    fail(source, ": target_column ", options.target_column,
         " is invalid (expected -1 for the last column, or a column index "
         ">= 0)");
  const char d = options.delimiter;
  if (d == '\n' || d == '\r' || d == '.' || d == '+' || d == '-' ||
      d == 'e' || d == 'E' || (d >= '0' && d <= '9'))
    fail(source, ": delimiter ", csv_show_char(d),
         " is invalid (expected a character that is neither a line break "
         "nor part of a number, or ' ' for runs of whitespace)");
}

/// Throws the error for a field whose parse status is not `ok`.
[[noreturn]] inline void csv_field_error(const std::string& source,
                                         std::size_t line, std::size_t column,
                                         std::string_view field,
                                         CsvNumber status) {
  const std::string where = concat(source, ':', line, ':', column, ": ");
  switch (status) {
    case CsvNumber::empty:
      fail(where, "empty field (expected a number)");
    case CsvNumber::non_finite:
      fail(where, "non-finite value ", quote_text(field),
           " (the data must be finite)");
    case CsvNumber::out_of_range:
      fail(where, "value ", quote_text(field),
           " is out of range for a double (the data must be finite)");
    default:
      fail(where, "non-numeric field ", quote_text(field),
           " (expected a number)");
  }
}

/// The class names of a target column while it is read: each distinct name
/// gets a provisional index in order of appearance, renumbered in sorted
/// order at the end.
struct CsvClassNames {
  bool on = false;                   // the first data row's target is a name
  std::size_t first_line = 0;        // where the first name was
  std::string first_name;            // and what it was, for messages
  std::map<std::string, double> index;  // name -> provisional index
  std::int64_t cost = 0;                // in values, for CsvOptions::max_values

  /// The provisional index of target field `field`; throws for a number
  /// among names, a name among numbers, or an empty field.
  double add(const std::string& source, std::size_t line, std::size_t column,
             std::string_view field, CsvNumber status) {
    const std::string where = concat(source, ':', line, ':', column, ": ");
    if (status == CsvNumber::empty) fail(where, "empty field (expected a class name)");
    if (!on)
      fail(where, "class name ", quote_text(field), " in a target column of numbers (line ",
           first_line, " holds a number; the target column must hold only numbers or only "
           "class names)");
    if (status != CsvNumber::not_numeric)
      fail(where, "number ", quote_text(field), " in a target column of class names (line ",
           first_line, " holds ", quote_text(first_name), "; the target column must hold only "
           "numbers or only class names)");
    auto it = index.find(std::string(field));
    if (it == index.end()) {
      const std::string reason = unprintable_reason(field);
      if (!reason.empty())
        fail(where, "class name ", quote_text(field), " holds ", reason, " (class names are "
             "printed as they are, so they must be UTF-8 text without control characters)");
      it = index.emplace(std::string(field), double(index.size())).first;
      cost += 16 + std::int64_t(field.size() / 8);  // a map node and the name's bytes
    }
    return it->second;
  }
  /// Notes where the first target was, for the messages above.
  void first(std::size_t line, std::string_view field) {
    first_line = line;
    first_name.assign(field.data(), field.size());
  }
  /// Renumbers the targets in sorted order of the names.
  void finish(const std::string& source, int num_classes, Table& table) {
    if (num_classes > 0 && index.size() > std::size_t(num_classes))
      fail(source, ": the target column holds ", index.size(), " class names, more than the ",
           num_classes, " classes expected");
    std::vector<double> sorted_index(index.size());
    double k = 0;
    for (const auto& entry : index) {  // std::map iterates in sorted order
      sorted_index[std::size_t(entry.second)] = k++;
      table.class_names.push_back(entry.first);
    }
    for (double& y : table.targets) y = sorted_index[std::size_t(y)];
  }
};

/// One parse_csv call: the table so far and what its first data row fixed.
class CsvReader {
 public:
  CsvReader(const std::string& source, const CsvOptions& options)
      : source_(source), options_(options) {
    csv_check_options(source, options);
    table_.source = source;
  }

  Table read(std::streambuf* in) {
    LineReader lines(in, source_, options_.max_line_bytes, "CsvOptions");
    try {
      std::string_view view;
      while (lines.next(view)) {
        line_ = lines.line_number();
        if (line_ == 1 && view.substr(0, 3) == "\xEF\xBB\xBF") view.remove_prefix(3);
        if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
        if (csv_trim(view).empty()) continue;
        csv_split(view, options_.delimiter, fields_);
        const bool first = !seen_first_;
        seen_first_ = true;
        if (first && is_header())
          table_.header.assign(fields_.begin(), fields_.end());
        else
          add_row();
      }
      if (table_.num_rows == 0) fail(source_, ": no data rows");
      if (names_.on) names_.finish(source_, options_.num_classes, table_);
    } catch (const std::bad_alloc&) {
      out_of_memory(source_, line_, table_.num_rows, table_.num_features, "CsvOptions");
    }
    return std::move(table_);
  }

 private:
  // With Header::automatic, a header iff a field is empty or not a number;
  // with class names the target field (as the first data row places it)
  // does not decide, and a one-field line is no data row.
  bool is_header() {
    if (options_.header != Header::automatic) return options_.header == Header::present;
    const std::size_t skip = !options_.class_names || fields_.size() < 2 ? fields_.size()
                             : options_.target_column < 0
                                 ? fields_.size() - 1
                                 : static_cast<std::size_t>(options_.target_column);
    double value = 0.0;
    for (std::size_t c = 0; c < fields_.size(); ++c) {
      if (c == skip) continue;
      const auto status = parse_csv_number(fields_[c], buffer_, value);
      if (status == CsvNumber::empty || status == CsvNumber::not_numeric) return true;
    }
    return false;
  }

  void start_columns() {
    num_columns_ = fields_.size();
    first_data_line_ = line_;
    if (num_columns_ < 2)
      fail(source_, ':', line_, ": row has ", num_columns_, " field, but at least 2 columns "
           "are needed (one or more features and the target)");
    if (options_.target_column >= 0 &&
        static_cast<std::size_t>(options_.target_column) >= num_columns_)
      fail(source_, ':', line_, ": target column ", options_.target_column,
           " is out of range for ", num_columns_, " columns");
    target_ = options_.target_column < 0 ? num_columns_ - 1
                                         : static_cast<std::size_t>(options_.target_column);
    table_.num_features = num_columns_ - 1;
    row_.resize(table_.num_features);
  }

  // Reads the row in `fields_` and appends it, unless the table would
  // then exceed max_values.
  void add_row() {
    if (num_columns_ == 0) {
      start_columns();
    } else if (fields_.size() != num_columns_) {
      fail(source_, ':', line_, ":1: row has ", fields_.size(),
           fields_.size() == 1 ? " field" : " fields", ", expected ", num_columns_,
           " (as on line ", first_data_line_, ")");
    }
    double target = 0.0;
    for (std::size_t c = 0, j = 0; c < num_columns_; ++c) {
      if (c == target_) {
        target = read_target(fields_[c], c + 1);
        continue;
      }
      const auto status = parse_csv_number(fields_[c], buffer_, row_[j++]);
      if (status != CsvNumber::ok &&
          !(status == CsvNumber::non_finite && options_.allow_nonfinite))
        csv_field_error(source_, line_, c + 1, fields_[c], status);
    }
    check_table_size(source_, line_, std::int64_t(table_.num_rows) + 1,
                     std::int64_t(table_.num_features), names_.cost, options_.max_values,
                     "CsvOptions");
    table_.features.insert(table_.features.end(), row_.begin(), row_.end());
    table_.targets.push_back(target);
    ++table_.num_rows;
  }

  double read_target(std::string_view field, std::size_t column) {
    double value = 0.0;
    const auto status = parse_csv_number(field, buffer_, value);
    if (options_.class_names) {
      if (table_.num_rows == 0) {
        names_.on = status == CsvNumber::not_numeric;
        names_.first(line_, field);
      }
      if (names_.on || status == CsvNumber::not_numeric)
        return names_.add(source_, line_, column, field, status);
    }
    if (status != CsvNumber::ok && !(status == CsvNumber::non_finite && options_.allow_nonfinite))
      csv_field_error(source_, line_, column, field, status);
    const int classes = options_.num_classes;
    if (classes > 0 && !(value >= 0 && value < classes && value == std::floor(value)))
      fail(source_, ':', line_, ':', column, ": label ", quote_text(field),
           " is not a class (expected an integer in [0, ", classes, "))");
    const TargetRule& rule = options_.target_rule;
    if (rule.accepts && !rule.accepts(value))
      fail(source_, ':', line_, ':', column, ": target ", quote_text(field),
           " is invalid (expected ", rule.expected, ")");
    return value;
  }

  const std::string& source_;
  const CsvOptions& options_;
  Table table_;
  std::vector<std::string_view> fields_;
  std::string buffer_;       // parse_csv_number's scratch
  std::vector<double> row_;  // the features of the row being read
  std::size_t line_ = 0;
  bool seen_first_ = false;  // the first non-blank line was handled
  std::size_t num_columns_ = 0, first_data_line_ = 0, target_ = 0;
  CsvClassNames names_;
};

}  // namespace detail

inline double Table::feature(std::size_t i, std::size_t j) const {
  if (i >= num_rows || j >= num_features)
    fail("gradsum::Table::feature: index (", i, ", ", j,
                 ") is out of range for a table of ", num_rows, " rows and ",
                 num_features, " features");
  return features[i * num_features + j];
}

inline Table parse_csv(std::istream& in, const std::string& source_name,
                       const CsvOptions& options) {
  return detail::CsvReader(source_name, options).read(in.rdbuf());
}

inline Table read_csv(const std::string& path, const CsvOptions& options) {
  detail::CsvReader reader(path, options);
  detail::TextFileBuffer text(path);
  return reader.read(&text);
}

}  // namespace gradsum
