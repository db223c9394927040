// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Text that came from a file, on its way to a terminal: how gradsum shows
/// it in a message (escaped), and the rule for text it prints as it is
/// (class names): UTF-8 without control characters, so that no file can
/// send a terminal an escape sequence, a carriage return or a bell.

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace gradsum {
namespace detail {

/// `text` as shown in a message: in single quotes, at most `max_shown`
/// bytes (then "..."), every byte that is not printable ASCII (controls,
/// DEL, any byte >= 0x80) and the backslash written as `\xNN`.
inline std::string quote_text(std::string_view text, std::size_t max_shown = 40) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "'";
  const std::size_t n = text.size() < max_shown ? text.size() : max_shown;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  if (text.size() > max_shown) out += "...";
  return out + "'";
}

/// The length of the UTF-8 sequence at `text[i]`, and its code point in
/// `code`; 0 when the bytes there are not valid UTF-8 (a stray
/// continuation byte, a truncated sequence, an overlong form, a surrogate,
/// beyond U+10FFFF).
inline std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& code) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const std::size_t n = lead < 0x80 ? 1 : lead >= 0xc2 && lead < 0xe0 ? 2
                        : lead >= 0xe0 && lead < 0xf0               ? 3
                        : lead >= 0xf0 && lead < 0xf5               ? 4
                                                                    : 0;
  if (n == 0 || i + n > text.size()) return 0;
  code = n == 1 ? lead : n == 2 ? lead & 0x1fu : n == 3 ? lead & 0x0fu : lead & 0x07u;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    code = (code << 6) | (c & 0x3fu);
  }
  static constexpr char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < smallest[n] || code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) return 0;
  return n;
}

/// Why `text` may not be printed as it is, or "" when it may: the first
/// control character (C0, DEL or C1: U+0000-U+001F, U+007F-U+009F) or the
/// first byte that is not valid UTF-8, and its 1-based byte position.
inline std::string unprintable_reason(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t code = 0;
    const std::size_t n = utf8_sequence(text, i, code);
    const std::string at = " at byte " + std::to_string(i + 1);
    if (n == 0)
      return "byte " + quote_text(text.substr(i, 1)) + ", which is not UTF-8 text," + at;
    if (code < 0x20 || (code >= 0x7f && code < 0xa0))
      return "control character " + quote_text(text.substr(i, n)) + at;
    i += n;
  }
  return {};
}

/// A byte as a message shows it: 'a', or \xNN for what does not print.
inline std::string shown_byte(unsigned char c) {
  char buffer[8];
  if (c >= 0x20 && c < 0x7f && c != '\'') std::snprintf(buffer, sizeof buffer, "'%c'", c);
  else std::snprintf(buffer, sizeof buffer, "'\\x%02x'", unsigned(c));
  return buffer;
}

/// Why `characters` is not a character-level vocabulary (its distinct
/// bytes in increasing order, at least one), or "" when it is.
inline std::string vocabulary_error(std::string_view characters) {
  if (characters.empty()) return "no characters; a vocabulary needs at least one";
  for (std::size_t i = 1; i < characters.size(); ++i)
    if (static_cast<unsigned char>(characters[i - 1]) >= static_cast<unsigned char>(characters[i]))
      return "characters " + std::to_string(i - 1) + " and " + std::to_string(i) + " (" +
             shown_byte(static_cast<unsigned char>(characters[i - 1])) + ", " +
             shown_byte(static_cast<unsigned char>(characters[i])) +
             ") are not in increasing order; a vocabulary is its distinct bytes, sorted";
  return {};
}

}  // namespace detail
}  // namespace gradsum
