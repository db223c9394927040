// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradsum {

/// The one exception type gradsum throws for bad input or failed resources.
///
/// Its message names what was wrong, the value seen and what was expected;
/// for inputs read from files it starts with `file:line:column:`.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {

template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  out.precision(17);
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// Throws gradsum::Error with the parts of the message streamed together.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(concat(std::forward<Parts>(parts)...));
}

}  // namespace detail
}  // namespace gradsum
