// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>

#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// Whether a loss offers value_and_derivative(z, k, y, dz), computing both
/// at once (BinaryCrossEntropy shares one exponential).
template <class L, class S, class = void>
struct has_value_and_derivative : std::false_type {};
template <class L, class S>
struct has_value_and_derivative<L, S, std::void_t<decltype(std::declval<const L&>().value_and_derivative(
                                          std::declval<const S*>(), 1, std::declval<S>(),
                                          std::declval<S*>()))>> : std::true_type {};

/// Whether a loss offers fused_value_and_derivative(z, k, y, dz): the same
/// as value_and_derivative() within a few ulps, in a form that vectorizes
/// on host spaces (SoftmaxCrossEntropy).
template <class L, class S, class = void>
struct has_fused_value_and_derivative : std::false_type {};
template <class L, class S>
struct has_fused_value_and_derivative<
    L, S, std::void_t<decltype(std::declval<const L&>().fused_value_and_derivative(
              std::declval<const S*>(), 1, std::declval<S>(), std::declval<S*>()))>>
    : std::true_type {};

/// Whether a one-output loss offers the block form
/// L::block_values_and_derivatives<B>(z, y, value, dz) over B samples at
/// once.
template <class L, class S, int B, class = void>
struct has_block_value_and_derivative : std::false_type {};
template <class L, class S, int B>
struct has_block_value_and_derivative<
    L, S, B,
    std::void_t<decltype(std::declval<const L&>().template block_values_and_derivatives<B>(
        std::declval<const S*>(), std::declval<const S*>(), std::declval<S*>(),
        std::declval<S*>()))>> : std::true_type {};

/// Whether L's block form also takes <B, true>: its multiply-adds fused
/// where the target has FMA (BinaryCrossEntropy's exp and log1p).
template <class L, class S, int B, class = void>
struct has_fused_block_form : std::false_type {};
template <class L, class S, int B>
struct has_fused_block_form<
    L, S, B,
    std::void_t<decltype(std::declval<const L&>().template block_values_and_derivatives<B, true>(
        std::declval<const S*>(), std::declval<const S*>(), std::declval<S*>(),
        std::declval<S*>()))>> : std::true_type {};

/// The loss's block form over B samples: dl/dz into dz[0 … B); returns the
/// sum of the first m losses, in order (lanes m … B-1 are padding). Fused
/// (Sum's path): the loss's fused form where it has one.
template <int B, bool Fused = false, class Loss, class Scalar>
KOKKOS_INLINE_FUNCTION Scalar block_value_and_derivative(const Loss& loss, const Scalar* z,
                                                         const Scalar* y, int m, Scalar* dz) {
  Scalar value[B];
  if constexpr (Fused && has_fused_block_form<Loss, Scalar, B>::value)
    loss.template block_values_and_derivatives<B, true>(z, y, value, dz);
  else
    loss.template block_values_and_derivatives<B>(z, y, value, dz);
  // A separate loop: without -ffast-math a running sum in the loss's loop
  // would keep it from being vectorized.
  Scalar total = 0;
  for (int s = 0; s < m; ++s) total += value[s];
  return total;
}

/// l(z, y), with dl/dz written into dz[0 … k): the loss's combined member
/// when it has one, else value() then derivative(). Fused (the layer-wise
/// path on host spaces): the loss's fused_value_and_derivative() where it
/// has one.
template <bool Fused = false, class Loss, class Scalar>
KOKKOS_INLINE_FUNCTION Scalar value_and_derivative(const Loss& loss, const Scalar* z, int k,
                                                   Scalar y, Scalar* dz) {
  if constexpr (Fused && has_fused_value_and_derivative<Loss, Scalar>::value) {
    return loss.fused_value_and_derivative(z, k, y, dz);
  } else if constexpr (has_value_and_derivative<Loss, Scalar>::value) {
    return loss.value_and_derivative(z, k, y, dz);
  } else {
    const Scalar value = loss.value(z, k, y);
    loss.derivative(z, k, y, dz);
    return value;
  }
}

}  // namespace detail
}  // namespace gradsum
