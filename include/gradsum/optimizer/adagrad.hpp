// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// AdaGrad: every coordinate scaled by the root of its summed squared
/// gradients.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

namespace gradsum {

/// AdaGrad (Duchi, Hazan & Singer, JMLR 12, 2011):
///
///     G <- G + g^2,     theta <- theta - lr g / (sqrt(G) + eps).
struct AdaGrad {
  double lr = 0.01;   ///< learning rate, > 0
  double eps = 1e-10; ///< added to the denominator, > 0

  static const char* name() { return "adagrad"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const {
    detail::require_positive("AdaGrad", "learning rate lr", lr);
    detail::require_positive("AdaGrad", "eps", eps);
  }
  /// One state vector: the sum of squared gradients G.
  static int state_size(int /*num_parameters*/) { return 1; }
  /// The state row that sums squares, never negative (checked on loading).
  static int squares_row() { return 0; }

  template <class Context>
  void update(Context& ctx) {
    using Scalar = typename Context::scalar_type;
    const Scalar step = Scalar(lr), e = Scalar(eps);
    auto theta = ctx.parameters();
    auto g = ctx.gradient();
    auto s = ctx.state();
    Kokkos::parallel_for(
        "gradsum::optimizer::adagrad", ctx.policy(), KOKKOS_LAMBDA(int j) {
          s(0, j) += g(j) * g(j);
          theta(j) -= step * g(j) / (math::sqrt(s(0, j)) + e);
        });
  }
};

}  // namespace gradsum
