// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Gradient descent with heavy-ball momentum.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

namespace gradsum {
namespace detail {

/// v <- mu v + g, then theta <- theta - lr v (heavy ball) or
/// theta <- theta - lr (g + mu v) (Nesterov's look-ahead).
template <bool LookAhead, class Context>
void momentum_update(Context& ctx, double lr, double momentum, const char* label) {
  using Scalar = typename Context::scalar_type;
  const Scalar step = Scalar(lr), mu = Scalar(momentum);
  auto theta = ctx.parameters();
  auto g = ctx.gradient();
  auto s = ctx.state();
  Kokkos::parallel_for(
      label, ctx.policy(), KOKKOS_LAMBDA(int j) {
        s(0, j) = mu * s(0, j) + g(j);
        theta(j) -= step * (LookAhead ? g(j) + mu * s(0, j) : s(0, j));
      });
}

}  // namespace detail

/// Gradient descent with heavy-ball momentum:
///
///     v <- mu v + g,     theta <- theta - lr v,     v = 0 at the start
///
/// (Polyak, USSR Comput. Math. Math. Phys. 4(5), 1964; in the form of
/// Sutskever, Martens, Dahl & Hinton, ICML 2013).
struct Momentum {
  /// Learning rate, > 0.
  double lr = 0.01;
  /// Momentum coefficient mu in [0, 1).
  double momentum = 0.9;

  static const char* name() { return "momentum"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const {
    detail::require_positive("Momentum", "learning rate lr", lr);
    detail::require_unit_interval("Momentum", "momentum", momentum);
  }
  /// One state vector: the velocity v.
  static int state_size(int /*num_parameters*/) { return 1; }

  template <class Context>
  void update(Context& ctx) {
    detail::momentum_update<false>(ctx, lr, momentum, "gradsum::optimizer::momentum");
  }
};

}  // namespace gradsum
