// SPDX-License-Identifier: Apache-2.0
#pragma once

// The learning rate of any optimizer policy, for logs (fit) and for the
// settings every rank must agree on (Step::signature).

#include <cmath>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

template <class O, class = void>
struct has_current_lr : std::false_type {};
template <class O>
struct has_current_lr<O, std::void_t<decltype(std::declval<const O&>().current_lr())>>
    : std::true_type {};
template <class O, class = void>
struct has_lr : std::false_type {};
template <class O>
struct has_lr<O, std::void_t<decltype(std::declval<const O&>().lr)>> : std::true_type {};

template <class O, class = void>
struct wraps_optimizer : std::false_type {};
template <class O>
struct wraps_optimizer<O, std::void_t<decltype(std::declval<const O&>().optimizer)>>
    : std::true_type {};

/// The learning rate the next update of `o` will use, NaN when it has none
/// (a wrapper such as Clipped answers for the optimizer it wraps).
template <class O>
double learning_rate(const O& o) {
  if constexpr (has_current_lr<O>::value) return double(o.current_lr());
  else if constexpr (has_lr<O>::value) return double(o.lr);
  else if constexpr (wraps_optimizer<O>::value) return learning_rate(o.optimizer);
  else return std::nan("");
}

}  // namespace detail
}  // namespace gradsum
