// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// AdaGrad: every coordinate scaled by the root of its summed squared
/// gradients.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/parameter_blocks.hpp>

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
    constexpr int W = detail::parameter_block_width<typename Context::execution_space>;
    const auto apply = KOKKOS_LAMBDA(detail::ParameterBlock<Scalar, 1, W> & b) {
      Scalar root[W];
      for (int i = 0; i < W; ++i) root[i] = b.state[0][i] += b.g[i] * b.g[i];
      detail::sqrt_block(root);
      for (int i = 0; i < W; ++i) b.theta[i] -= step * b.g[i] / (root[i] + e);
    };
    detail::update_in_blocks<1>(ctx, "gradsum::optimizer::adagrad", apply);
  }
};

}  // namespace gradsum
