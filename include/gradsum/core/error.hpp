// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
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

/// Streams a value; a floating-point value with the fewest significant
/// digits (up to 17) that read back as the same number, so messages say
/// "got -0.1", not "got -0.10000000000000001".
template <class T>
void put(std::ostream& out, const T& value) {
  if constexpr (std::is_floating_point<std::decay_t<T>>::value) {
    for (int digits = 6; digits <= 17; ++digits) {
      std::ostringstream trial;
      trial.precision(digits);
      trial << value;
      std::istringstream back(trial.str());
      std::decay_t<T> read{};
      if ((back >> read && read == value) || digits == 17 || value != value) {
        out << trial.str();
        return;
      }
    }
  } else {
    out << value;
  }
}

template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (put(out, parts), ...);
  return out.str();
}

/// Throws gradsum::Error with the parts of the message streamed together.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(concat(std::forward<Parts>(parts)...));
}

}  // namespace detail
}  // namespace gradsum
