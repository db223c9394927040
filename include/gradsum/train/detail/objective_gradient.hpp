// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a step's aggregated sums become the gradient of the objective J.

#include <gradsum/core/kokkos_compat.hpp>

namespace gradsum {
namespace detail {

/// g(j) = scale * sum(j) + l2 * theta(j) on regularised j; accumulates
/// ||g||^2 and ||W||^2.
template <class Model, class Scalar, class Sums, class Theta, class G>
struct ObjectiveGradient {
  using value_type = Scalar[];
  using size_type = int;
  int value_count;  // 2
  Model model;
  Sums sums;
  Theta theta;
  G g;
  Scalar scale;
  Scalar l2;

  KOKKOS_FUNCTION void operator()(int j, Scalar* acc) const {
    const Scalar w = model.is_regularized(j) ? theta(j) : Scalar(0);
    const Scalar gj = scale * sums(j) + l2 * w;
    g(j) = gj;
    acc[0] += gj * gj;
    acc[1] += w * w;
  }
  KOKKOS_FUNCTION void init(Scalar* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};

}  // namespace detail
}  // namespace gradsum
