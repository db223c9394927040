// SPDX-License-Identifier: Apache-2.0
#pragma once

// A program's command line as one table: each flag's name, the name of its
// value, its help, how it applies to the options and whether every rank
// must share it. The parser, --help and the ranks' agreement are made from
// the table, so a new flag is one entry. Needs neither Kokkos nor MPI, so
// the parsers can be tested and fuzzed alone.

#include <gradsum/core/error.hpp>
#include <gradsum/core/signature.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum_apps {

/// The finite number `text` given to `flag`; throws naming both otherwise.
inline double parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  // ERANGE also marks a subnormal result, which is finite and kept.
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    gradsum::fail(flag, ": expected a finite number, got '", text, "'");
  if (errno == ERANGE && v == 0)
    gradsum::fail(flag, ": '", text, "' is too close to 0 to be represented (it would be 0)");
  return v;
}

/// The integer `text` given to `flag`, in [lo, hi]; throws naming both otherwise.
inline std::int64_t parse_integer(const std::string& flag, const std::string& text,
                                  std::int64_t lo, std::int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    gradsum::fail(flag, ": expected an integer in [", lo, ", ", hi, "], got '", text, "'");
  return v;
}

/// "a, b or c": the choices as a message lists them.
inline std::string either(const std::vector<std::string>& choices) {
  std::string out;
  for (std::size_t k = 0; k < choices.size(); ++k)
    out += (k == 0 ? "" : k + 1 == choices.size() ? " or " : ", ") + choices[k];
  return out;
}

/// The choices separated by " | ", in lines of at most `width` characters:
/// a list made from a table, for --help.
inline std::string choice_lines(const std::vector<std::string>& choices, std::size_t width) {
  std::string out, line;
  for (std::size_t k = 0; k < choices.size(); ++k) {
    const std::string item = choices[k] + (k + 1 < choices.size() ? " |" : "");
    if (!line.empty() && line.size() + 1 + item.size() > width) {
      out += line + '\n';
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

/// The value of a flag as its setter sees it, with the checks many flags
/// make; each throws gradsum::Error naming the flag and the value.
struct Value {
  const std::string& flag;
  const std::string& text;

  double number() const { return parse_double(flag, text); }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) const {
    return parse_integer(flag, text, lo, hi);
  }
  double positive() const {
    const double v = number();
    if (!(v > 0)) gradsum::fail(flag, ": must be positive, got ", v);
    return v;
  }
  double non_negative() const {
    const double v = number();
    if (v < 0) gradsum::fail(flag, ": must be non-negative, got ", v);
    return v;
  }
  /// A file name ('-' often stands for standard output).
  const std::string& file() const {
    if (text.empty()) gradsum::fail(flag, ": empty file name");
    return text;
  }
  const std::string& one_of(const std::vector<std::string>& choices) const {
    for (const auto& c : choices)
      if (c == text) return text;
    gradsum::fail(flag, ": expected ", either(choices), ", got '", text, "'");
  }
};

/// The fields every rank must share, kept by kind so that a message about
/// ranks that disagree lists the texts, then the numbers, then the integers.
struct AgreedFields {
  gradsum::Signature texts, numbers, integers;

  void add(const std::string& name, const std::string& text) { texts.add_hash(name, text); }
  void add(const std::string& name, double value) { numbers.add_bits(name, value); }
  template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
  void add(const std::string& name, T value) {
    integers.add(name, std::int64_t(value));
  }
  gradsum::Signature signature() const {
    gradsum::Signature s = texts;
    s.append(numbers);
    s.append(integers);
    return s;
  }
};

/// One flag of a program whose options are an `Options`.
template <class Options>
struct Flag {
  /// "--lr"; a name ending in '-' takes every argument starting with it
  /// ("--kokkos-": Kokkos' own flags, "--kokkos-threads=2").
  std::string name;
  /// The value's name in --help ("X"); empty for a flag that takes none.
  std::string value;
  /// Lines separated by '\n'; empty keeps the flag out of --help. A flag
  /// with the same help as the one before shares its line ("--beta1 X, --beta2 X").
  std::string help;
  /// Applies the flag to the options, checking its value.
  void (*apply)(Options&, const Value&);
  /// Adds what every rank must share to the fields, under the flag's name
  /// (see `same` and `given`); nullptr when the ranks may differ (a path).
  void (*agree)(const char* flag, const Options&, AgreedFields&) = nullptr;
};

/// The `agree` of a flag whose field every rank must share.
template <auto field, class Options>
void same(const char* flag, const Options& o, AgreedFields& fields) {
  fields.add(flag, o.*field);
}

/// The `agree` of an output: the ranks may name other files, but whether
/// it is written must agree, as writing is collective.
template <auto field, class Options>
void given(const char* flag, const Options& o, AgreedFields& fields) {
  fields.add(std::string(flag) + " given", !(o.*field).empty());
}

/// How a program words its command-line errors.
struct Parsing {
  std::string unknown;     // before "unknown option": "" or "--plan: "
  std::string help_flag;   // where an unknown flag's message sends the user: "--help"
  bool help_stops = false; // --help ends the parsing, the rest unread
};

/// Applies `args` to `o` by `table` and returns the flags given, in order;
/// with `parsing.help_stops`, the flag that sets `o.help` is the last read.
/// Throws gradsum::Error naming the flag on an unknown flag, a missing
/// value or a value its setter refuses.
template <class Options>
std::vector<std::string> parse_flags(const std::vector<Flag<Options>>& table,
                                     const std::vector<std::string>& args, Options& o,
                                     const Parsing& parsing) {
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < args.size() && !(parsing.help_stops && o.help); ++i) {
    const std::string& arg = args[i];
    const Flag<Options>* flag = nullptr;
    for (const auto& f : table)
      if (f.name == arg || (f.name.back() == '-' && arg.rfind(f.name, 0) == 0)) flag = &f;
    if (!flag)
      gradsum::fail(parsing.unknown, "unknown option '", arg, "' (see ", parsing.help_flag, ")");
    if (!flag->value.empty() && i + 1 >= args.size()) gradsum::fail(arg, ": missing value");
    const std::string& text = flag->value.empty() ? arg : args[++i];
    flag->apply(o, Value{arg, text});
    seen.push_back(arg);
  }
  return seen;
}

/// The options part of --help: "  NAME VALUE", padded to `column`, then
/// the help's lines, further lines indented to `column`.
template <class Options>
std::string describe_flags(const std::vector<Flag<Options>>& table, std::size_t column) {
  std::string out, left;
  for (std::size_t k = 0; k < table.size(); ++k) {
    const Flag<Options>& f = table[k];
    if (f.help.empty()) continue;
    left += (left.empty() ? "  " : ", ") + f.name + (f.name.back() == '-' ? "..." : "");
    if (!f.value.empty()) left += ' ' + f.value;
    if (k + 1 < table.size() && table[k + 1].help == f.help) continue;
    out += left + std::string(left.size() < column ? column - left.size() : 1, ' ');
    for (char c : f.help) out += c == '\n' ? '\n' + std::string(column, ' ') : std::string(1, c);
    out += '\n';
    left.clear();
  }
  return out;
}

/// The fields of `o` that every rank must share, by `table`'s `agree`.
template <class Options>
gradsum::Signature agreed_fields(const std::vector<Flag<Options>>& table, const Options& o) {
  AgreedFields fields;
  for (const auto& f : table)
    if (f.agree) f.agree(f.name.c_str(), o, fields);
  return fields.signature();
}

}  // namespace gradsum_apps
