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

}  // namespace detail

/// The parts streamed together into one string, numbers as short as they
/// read back exactly ("got -0.1"): how gradsum words its messages.
template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (detail::put(out, parts), ...);
  return out.str();
}

/// Throws gradsum::Error with the parts of the message streamed together
/// (see concat), for code that reports errors the way gradsum does.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(concat(std::forward<Parts>(parts)...));
}

/// Runs `work` on every rank of `aggregation` (any aggregation policy: its
/// first_error agrees on a message); a gradsum::Error it throws on any rank
/// becomes the same gradsum::Error on every rank, so that no rank is left
/// waiting in a collective. For work only some ranks do (rank 0 writing a
/// file). Blocking; collective.
template <class Aggregation, class Work>
void on_every_rank(Aggregation& aggregation, Work&& work) {
  std::string error;
  try {
    work();
  } catch (const Error& e) {
    error = e.what();
  }
  error = aggregation.first_error(error);
  if (!error.empty()) throw Error(error);
}

namespace detail {
using gradsum::concat;
using gradsum::fail;
}  // namespace detail

}  // namespace gradsum
