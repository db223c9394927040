// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>

#include <cmath>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// Rejects a hyperparameter that is not positive and finite.
inline void require_positive(const char* policy, const char* name, double value) {
  if (!(value > 0) || !std::isfinite(value))
    fail("gradsum::", policy, ": ", name, " must be positive and finite, got ", value);
}

/// Rejects a hyperparameter that is negative or not finite.
inline void require_non_negative(const char* policy, const char* name, double value) {
  if (!(value >= 0) || !std::isfinite(value))
    fail("gradsum::", policy, ": ", name, " must be non-negative and finite, got ", value);
}

/// Rejects a decay rate outside [0, 1).
inline void require_unit_interval(const char* policy, const char* name, double value) {
  if (!(value >= 0 && value < 1))
    fail("gradsum::", policy, ": ", name, " must be in [0, 1), got ", value);
}

template <class O, class = void>
struct has_squares_row : std::false_type {};
template <class O>
struct has_squares_row<O, std::void_t<decltype(std::declval<const O&>().squares_row())>>
    : std::true_type {};

/// The state row of `optimizer` that holds sums or averages of squares,
/// which no update makes negative (an optional `squares_row()`), or -1.
template <class O>
int squares_row(const O& optimizer) {
  if constexpr (has_squares_row<O>::value)
    return optimizer.squares_row();
  else
    return -1;
}

template <class O, class = void>
struct is_elementwise : std::false_type {};
/// Whether optimizer O declares `static constexpr bool elementwise = true`:
/// its update of parameter j reads only g(j), theta(j) and state column j,
/// over the context's policy(), and calls nothing else of the context but
/// space(), result(), num_parameters() and those views. Such an update runs
/// on a shard of the parameters (ZeRO stage 1) unchanged.
template <class O>
struct is_elementwise<O, std::enable_if_t<O::elementwise>> : std::true_type {};

}  // namespace detail
}  // namespace gradsum
