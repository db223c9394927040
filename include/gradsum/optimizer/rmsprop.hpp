// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// RMSProp: every coordinate scaled by the root of a running mean of its
/// squared gradients.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/parameter_blocks.hpp>

namespace gradsum {

/// RMSProp (Tieleman & Hinton, COURSERA Neural Networks lecture 6.5, 2012):
///
///     s <- rho s + (1 - rho) g^2,     theta <- theta - lr g / (sqrt(s) + eps).
struct RMSProp {
  double lr = 0.001; ///< learning rate, > 0
  double rho = 0.9;  ///< decay of the squared-gradient average, in [0, 1)
  double eps = 1e-8; ///< added to the denominator, > 0

  static const char* name() { return "rmsprop"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const {
    detail::require_positive("RMSProp", "learning rate lr", lr);
    detail::require_unit_interval("RMSProp", "rho", rho);
    detail::require_positive("RMSProp", "eps", eps);
  }
  /// One state vector: the running mean of g^2.
  static int state_size(int /*num_parameters*/) { return 1; }
  /// The state row that averages squares, never negative (checked on loading).
  static int squares_row() { return 0; }

  template <class Context>
  void update(Context& ctx) {
    using Scalar = typename Context::scalar_type;
    const Scalar step = Scalar(lr), r = Scalar(rho), e = Scalar(eps);
    constexpr int W = detail::parameter_block_width<typename Context::execution_space>;
    const auto apply = KOKKOS_LAMBDA(detail::ParameterBlock<Scalar, 1, W> & b) {
      Scalar root[W];
      for (int i = 0; i < W; ++i)
        root[i] = b.state[0][i] = r * b.state[0][i] + (Scalar(1) - r) * b.g[i] * b.g[i];
      detail::sqrt_block(root);
      for (int i = 0; i < W; ++i) b.theta[i] -= step * b.g[i] / (root[i] + e);
    };
    detail::update_in_blocks<1>(ctx, "gradsum::optimizer::rmsprop", apply);
  }
};

}  // namespace gradsum
