// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The JSON header of a safetensors file: a parser for exactly the shape
/// that format allows (an object of tensor entries and an optional
/// "__metadata__" object of strings) and the writer of the same. Not a
/// general JSON parser: anything else is refused with the header byte where
/// it was found, so a hostile header cannot nest, recurse or grow.

#include <gradsum/core/error.hpp>
#include <gradsum/core/text.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsum {

/// One tensor entry of a safetensors header.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;                   ///< "F32", "F64", … as the file names it
  std::vector<std::uint64_t> shape;    ///< row-major extents; [] for a scalar
  std::uint64_t begin = 0, end = 0;    ///< data_offsets: bytes [begin, end) of the data
};

namespace detail {

/// The most dimensions a tensor entry may declare.
constexpr std::size_t safetensors_max_rank = 16;

/// Parses a safetensors header (the `text` after the 8-byte length) read
/// from `path`; errors name `function`, the path and the file byte.
class SafetensorsHeaderParser {
 public:
  SafetensorsHeaderParser(std::string_view text, const std::string& path, const char* function)
      : text_(text), path_(path), function_(function) {}

  /// Fills `metadata` and `tensors` in the order of the header.
  void parse(std::vector<std::pair<std::string, std::string>>& metadata,
             std::vector<SafetensorsTensor>& tensors) {
    std::set<std::string> names;
    object("the header", "a tensor name", [&](std::string name, std::size_t at) {
      if (!names.insert(name).second)
        fail(where(at), "the name ", quote_text(name), " appears twice");
      if (name == "__metadata__")
        parse_metadata(metadata);
      else
        tensors.push_back(tensor(std::move(name)));
    });
    skip_space();
    if (at_ != text_.size()) bad("nothing after the header's closing '}' but spaces");
  }

 private:
  std::string where(std::size_t at) const {
    return concat(function_, ": '", path_, "': header byte ", 8 + at, ": ");
  }
  [[noreturn]] void bad(const std::string& expected) const {
    if (at_ >= text_.size())
      fail(where(at_), "the header ends where ", expected, " was expected");
    fail(where(at_), "expected ", expected, ", found ", quote_text(text_.substr(at_, 1)));
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' ||
                                   text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }
  bool accept(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!accept(c)) bad(what);
  }

  // An object `{ "key": value, … }` (`what` in messages, its keys `keys`):
  // member(key, byte of the key) parses each value.
  template <class Member>
  void object(const char* what, const char* keys, const Member& member) {
    if (!accept('{')) bad(concat("'{' opening ", what));
    bool first = true;
    while (!accept('}')) {
      if (!first && !accept(',')) bad(concat("',' or '}' in ", what));
      first = false;
      const std::size_t at = at_;
      std::string key = string(keys);
      expect(':', "':' after a key");
      member(std::move(key), at);
    }
  }

  unsigned hex_digit() {
    const char c = at_ < text_.size() ? text_[at_] : '\0';
    const unsigned v = c >= '0' && c <= '9'   ? unsigned(c - '0')
                       : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                              : 16u;
    if (v == 16) bad("a hex digit of a \\u escape");
    ++at_;
    return v;
  }
  char32_t code_unit() {
    char32_t u = 0;
    for (int k = 0; k < 4; ++k) u = (u << 4) | hex_digit();
    return u;
  }
  // A \uXXXX escape (the backslash and 'u' read), a surrogate pair joined.
  char32_t escaped_code_point() {
    const std::size_t at = at_;
    char32_t code = code_unit();
    if (code >= 0xdc00 && code < 0xe000) fail(where(at), "a lone low surrogate \\u escape");
    if (code >= 0xd800 && code < 0xdc00) {
      if (text_.substr(at_, 2) != "\\u") fail(where(at), "a high surrogate alone");
      at_ += 2;
      const char32_t low = code_unit();
      if (low < 0xdc00 || low >= 0xe000) fail(where(at), "a high surrogate alone");
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    return code;
  }
  static void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xc0 | (c >> 6));
      out += char(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += char(0xe0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    } else {
      out += char(0xf0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3f));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    }
  }
  char escape() {
    static constexpr char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    for (int k = 0; k < 8; ++k)
      if (at_ < text_.size() && text_[at_] == from[k]) return ++at_, to[k];
    bad("an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
  }
  std::string string(const char* what) {
    if (!accept('"')) bad(what);
    std::string out;
    while (true) {
      if (at_ >= text_.size()) bad("'\"' closing a string");
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') return ++at_, out;
      if (c < 0x20) bad("a string character (control characters must be escaped)");
      char32_t code = 0;
      if (c == '\\') {
        ++at_;
        if (at_ < text_.size() && text_[at_] == 'u') {
          ++at_;
          append_utf8(out, escaped_code_point());
        } else {
          out += escape();
        }
        continue;
      }
      const std::size_t n = utf8_sequence(text_, at_, code);
      if (n == 0) bad("UTF-8 text");
      out.append(text_.substr(at_, n));
      at_ += n;
    }
  }
  std::uint64_t integer(const char* what) {
    skip_space();
    const std::size_t start = at_;
    std::uint64_t v = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const unsigned digit = unsigned(text_[at_] - '0');
      if (v > (UINT64_MAX - digit) / 10) fail(where(start), what, " does not fit 64 bits");
      v = v * 10 + digit;
      ++at_;
    }
    if (at_ == start) bad(what);
    if (text_[start] == '0' && at_ - start > 1) fail(where(start), what, " has a leading zero");
    return v;
  }
  std::vector<std::uint64_t> integers(const char* what, std::size_t most) {
    std::vector<std::uint64_t> out;
    expect('[', "'[' opening an array of integers");
    if (accept(']')) return out;
    do {
      if (out.size() == most)
        fail(where(at_), "an array of more than ", most, " integers (", what, ")");
      out.push_back(integer(what));
    } while (accept(','));
    expect(']', "',' or ']' in an array of integers");
    return out;
  }

  void parse_metadata(std::vector<std::pair<std::string, std::string>>& metadata) {
    std::set<std::string> keys;
    object("__metadata__", "a __metadata__ key", [&](std::string key, std::size_t at) {
      if (!keys.insert(key).second)
        fail(where(at), "the __metadata__ key ", quote_text(key), " appears twice");
      metadata.emplace_back(std::move(key), string("a string value in __metadata__"));
    });
  }

  SafetensorsTensor tensor(std::string name) {
    SafetensorsTensor t;
    t.name = std::move(name);
    bool dtype = false, shape = false, offsets = false;
    const char* keys = "a key of a tensor entry";
    object("a tensor entry", keys, [&](const std::string& key, std::size_t at) {
      bool* seen = key == "dtype" ? &dtype : key == "shape" ? &shape
                   : key == "data_offsets"                ? &offsets
                                                          : nullptr;
      if (!seen)
        fail(where(at), "tensor ", quote_text(t.name), " has key ", quote_text(key),
             "; expected dtype, shape and data_offsets");
      if (*seen) fail(where(at), "tensor ", quote_text(t.name), " has ", key, " twice");
      *seen = true;
      if (key == "dtype") {
        t.dtype = string("a dtype string");
      } else if (key == "shape") {
        t.shape = integers("a dimension", safetensors_max_rank);
      } else {
        const std::vector<std::uint64_t> o = integers("an offset", 2);
        if (o.size() != 2)
          fail(where(at), "tensor ", quote_text(t.name), " has ", o.size(),
               " data_offsets, expected 2 ([begin, end])");
        t.begin = o[0];
        t.end = o[1];
      }
    });
    if (!(dtype && shape && offsets))
      fail(where(at_ - 1), "tensor ", quote_text(t.name), " lacks ",
           !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    return t;
  }

  std::string_view text_;
  const std::string& path_;
  const char* function_;
  std::size_t at_ = 0;
};

/// `s` as a JSON string: quotes, backslashes and control characters
/// escaped, other UTF-8 as it is.
inline std::string json_string(const std::string& s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace detail
}  // namespace gradsum
