// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Reading numeric tables (features plus one target column, which may hold
/// class names) from delimited text files on the host.

#include <gradsum/core/error.hpp>
#include <gradsum/data/gzip.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gradsum {

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
  /// fields alone (a non-numeric target is no sign of a header).
  bool class_names = false;
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
/// bad field, `source:line: ` for a problem of a whole row or `source: `
/// for the file as a whole. A row with the wrong number of fields is
/// reported at column 1. The work is linear in the size of the input.
Table parse_csv(std::istream& in, const std::string& source_name,
                const CsvOptions& options = {});

/// Opens the file at `path` and parses it as `parse_csv` does, with `path`
/// as the source name. A gzip-compressed file (it starts with the bytes
/// 1f 8b, whatever its name) is decompressed through zlib first (see
/// data/gzip.hpp). Throws gradsum::Error naming the path and the system's
/// reason if the file cannot be opened or read.
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

/// A field as shown in an error message: at most 40 bytes, with bytes
/// that are not printable ASCII written as `\xNN`.
inline std::string csv_quote(std::string_view field) {
  constexpr std::size_t max_shown = 40;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  const std::size_t n = field.size() < max_shown ? field.size() : max_shown;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  if (field.size() > max_shown) out += "...";
  return "'" + out + "'";
}

inline std::string csv_show_char(char c) {
  return csv_quote(std::string_view(&c, 1));
}

inline void csv_check_options(const std::string& source,
                              const CsvOptions& options) {
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
      fail(where, "non-finite value ", csv_quote(field),
           " (the data must be finite)");
    case CsvNumber::out_of_range:
      fail(where, "value ", csv_quote(field),
           " is out of range for a double (the data must be finite)");
    default:
      fail(where, "non-numeric field ", csv_quote(field),
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
  std::vector<std::string> in_order;    // names in order of appearance

  /// The provisional index of target field `field`; throws for a number
  /// among names, a name among numbers, or an empty field.
  double add(const std::string& source, std::size_t line, std::size_t column,
             std::string_view field, CsvNumber status) {
    const std::string where = concat(source, ':', line, ':', column, ": ");
    if (status == CsvNumber::empty) fail(where, "empty field (expected a class name)");
    if (!on)
      fail(where, "class name ", csv_quote(field), " in a target column of numbers (line ",
           first_line, " holds a number; the target column must hold only numbers or only "
           "class names)");
    if (status != CsvNumber::not_numeric)
      fail(where, "number ", csv_quote(field), " in a target column of class names (line ",
           first_line, " holds ", csv_quote(first_name), "; the target column must hold only "
           "numbers or only class names)");
    auto it = index.find(std::string(field));
    if (it == index.end()) {
      it = index.emplace(std::string(field), double(in_order.size())).first;
      in_order.push_back(it->first);
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
    std::vector<double> sorted_index(in_order.size());
    double k = 0;
    for (const auto& entry : index) {  // std::map iterates in sorted order
      sorted_index[std::size_t(entry.second)] = k++;
      table.class_names.push_back(entry.first);
    }
    for (double& y : table.targets) y = sorted_index[std::size_t(y)];
  }
};

}  // namespace detail

inline double Table::feature(std::size_t i, std::size_t j) const {
  if (i >= num_rows || j >= num_features)
    detail::fail("gradsum::Table::feature: index (", i, ", ", j,
                 ") is out of range for a table of ", num_rows, " rows and ",
                 num_features, " features");
  return features[i * num_features + j];
}

inline Table parse_csv(std::istream& in, const std::string& source_name,
                       const CsvOptions& options) {
  detail::csv_check_options(source_name, options);

  Table table;
  table.source = source_name;

  std::string line;
  std::string buffer;
  std::vector<std::string_view> fields;
  std::size_t line_number = 0;
  bool seen_first = false;       // the first non-blank line was handled
  std::size_t num_columns = 0;   // fixed by the first data row
  std::size_t first_data_line = 0;
  std::size_t target = 0;
  detail::CsvClassNames names;

  while (std::getline(in, line)) {
    ++line_number;
    std::string_view view(line);
    if (line_number == 1 && view.substr(0, 3) == "\xEF\xBB\xBF")
      view.remove_prefix(3);
    if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
    if (detail::csv_trim(view).empty()) continue;

    detail::csv_split(view, options.delimiter, fields);

    if (!seen_first) {
      seen_first = true;
      bool is_header = options.header == Header::present;
      if (options.header == Header::automatic) {
        double value = 0.0;
        // With class names, the target field (the one the first data row
        // would use) does not decide; a one-field line is no data row.
        const std::size_t skip =
            !options.class_names || fields.size() < 2 ? fields.size()
            : options.target_column < 0 ? fields.size() - 1
                                        : static_cast<std::size_t>(options.target_column);
        for (std::size_t c = 0; c < fields.size(); ++c) {
          if (c == skip) continue;
          const std::string_view f = fields[c];
          const auto status = detail::parse_csv_number(f, buffer, value);
          if (status == detail::CsvNumber::empty ||
              status == detail::CsvNumber::not_numeric) {
            is_header = true;
            break;
          }
        }
      }
      if (is_header) {
        table.header.assign(fields.begin(), fields.end());
        continue;
      }
    }

    if (num_columns == 0) {
      num_columns = fields.size();
      first_data_line = line_number;
      if (num_columns < 2)
        detail::fail(source_name, ':', line_number, ": row has ", num_columns,
                     " field, but at least 2 columns are needed (one or "
                     "more features and the target)");
      if (options.target_column >= 0 &&
          static_cast<std::size_t>(options.target_column) >= num_columns)
        detail::fail(source_name, ':', line_number, ": target column ",
                     options.target_column, " is out of range for ",
                     num_columns, " columns");
      target = options.target_column < 0
                   ? num_columns - 1
                   : static_cast<std::size_t>(options.target_column);
      table.num_features = num_columns - 1;
    } else if (fields.size() != num_columns) {
      detail::fail(source_name, ':', line_number, ":1: row has ",
                   fields.size(), fields.size() == 1 ? " field" : " fields",
                   ", expected ", num_columns, " (as on line ",
                   first_data_line, ")");
    }

    for (std::size_t c = 0; c < num_columns; ++c) {
      double value = 0.0;
      const auto status = detail::parse_csv_number(fields[c], buffer, value);
      if (c == target && options.class_names) {
        if (table.num_rows == 0) {
          names.on = status == detail::CsvNumber::not_numeric;
          names.first(line_number, fields[c]);
        }
        if (names.on || status == detail::CsvNumber::not_numeric) {
          value = names.add(source_name, line_number, c + 1, fields[c], status);
          table.targets.push_back(value);
          continue;
        }
      }
      if (status != detail::CsvNumber::ok &&
          !(status == detail::CsvNumber::non_finite && options.allow_nonfinite))
        detail::csv_field_error(source_name, line_number, c + 1, fields[c],
                                status);
      if (c == target && options.num_classes > 0 &&
          !(value >= 0 && value < options.num_classes && value == std::floor(value)))
        detail::fail(source_name, ':', line_number, ':', c + 1, ": label ",
                     detail::csv_quote(fields[c]), " is not a class (expected an integer in [0, ",
                     options.num_classes, "))");
      if (c == target)
        table.targets.push_back(value);
      else
        table.features.push_back(value);
    }
    ++table.num_rows;
  }

  if (in.bad())
    detail::fail(source_name, ": read error after line ", line_number);
  if (table.num_rows == 0) detail::fail(source_name, ": no data rows");
  if (names.on) names.finish(source_name, options.num_classes, table);
  return table;
}

inline Table read_csv(const std::string& path, const CsvOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    detail::fail(path, ": cannot open for reading: ",
                 std::generic_category().message(EISDIR));
  errno = 0;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int err = errno;
    detail::fail(path, ": cannot open for reading: ",
                 err != 0 ? std::generic_category().message(err)
                          : std::string("unknown reason"));
  }
  char magic[2] = {0, 0};
  if (file.read(magic, 2) && magic[0] == '\x1f' && magic[1] == '\x8b') {
    std::istringstream text(detail::read_gzip(path));
    return parse_csv(text, path, options);
  }
  file.clear();
  file.seekg(0);
  return parse_csv(file, path, options);
}

}  // namespace gradsum
