// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Adam: bias-corrected first and second moments of the gradient.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/parameter_blocks.hpp>

#include <cmath>
#include <cstdint>

namespace gradsum {

namespace detail {

/// The Adam/AdamW update with the hyperparameters of `o` (any struct with
/// lr, beta1, beta2, eps, weight_decay, t).
template <class Options, class Context>
void adam_update(Options& o, Context& ctx, const char* label) {
  using Scalar = typename Context::scalar_type;
  ++o.t;
  const Scalar step = Scalar(o.lr), b1 = Scalar(o.beta1), b2 = Scalar(o.beta2),
               e = Scalar(o.eps), decay = Scalar(o.weight_decay);
  const Scalar c1 = Scalar(1 - std::pow(o.beta1, double(o.t)));
  const Scalar c2 = Scalar(1 - std::pow(o.beta2, double(o.t)));
  constexpr int W = parameter_block_width<typename Context::execution_space>;
  update_in_blocks<2>(ctx, label, KOKKOS_LAMBDA(ParameterBlock<Scalar, 2, W> & b) {
    Scalar m_hat[W], root[W];
    for (int i = 0; i < W; ++i) {
      b.state[0][i] = b1 * b.state[0][i] + (Scalar(1) - b1) * b.g[i];
      b.state[1][i] = b2 * b.state[1][i] + (Scalar(1) - b2) * b.g[i] * b.g[i];
      m_hat[i] = b.state[0][i] / c1;
      root[i] = b.state[1][i] / c2;
    }
    sqrt_block(root);
    for (int i = 0; i < W; ++i)
      b.theta[i] -= step * (m_hat[i] / (root[i] + e) + decay * b.theta[i]);
  });
}

template <class Options>
void adam_validate(const Options& o, const char* policy) {
  require_positive(policy, "learning rate lr", o.lr);
  require_unit_interval(policy, "beta1", o.beta1);
  require_unit_interval(policy, "beta2", o.beta2);
  require_positive(policy, "eps", o.eps);
  require_non_negative(policy, "weight_decay", o.weight_decay);
}

}  // namespace detail

/// Adam (Kingma & Ba, ICLR 2015, Algorithm 1) with bias correction:
///
///     m <- b1 m + (1 - b1) g,     v <- b2 v + (1 - b2) g^2,
///     theta <- theta - lr [ (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
///                           + lambda theta ],
///
/// t = 1, 2, … counting updates, lambda = weight_decay (0 by default). The
/// decay is decoupled from the adaptive scaling, as in AdamW (which is
/// this update with lambda = 0.01 by default), and applies to every
/// parameter, biases included (Objective::l2 spares them).
struct Adam {
  double lr = 0.001;        ///< learning rate, > 0
  double beta1 = 0.9;       ///< first-moment decay, in [0, 1)
  double beta2 = 0.999;     ///< second-moment decay, in [0, 1)
  double eps = 1e-8;        ///< added to the denominator, > 0
  double weight_decay = 0;  ///< decoupled decay lambda >= 0
  std::int64_t t = 0;       ///< updates done so far (saved by checkpoints)

  static const char* name() { return "adam"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const { detail::adam_validate(*this, "Adam"); }
  /// Two state vectors: the moments m and v.
  static int state_size(int /*num_parameters*/) { return 2; }
  /// The state row that averages squares (v), never negative (checked on
  /// loading).
  static int squares_row() { return 1; }
  template <class Context>
  void update(Context& ctx) {
    detail::adam_update(*this, ctx, "gradsum::optimizer::adam");
  }
};

}  // namespace gradsum
