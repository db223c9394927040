// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Nesterov's accelerated gradient, in its look-ahead form.

#include <gradsum/optimizer/momentum.hpp>

namespace gradsum {

/// Nesterov's accelerated gradient in its look-ahead form:
///
///     v <- mu v + g,     theta <- theta - lr (g + mu v),
///
/// which evaluates the gradient at the current point and applies the
/// momentum step a second time, equivalent to taking the gradient at the
/// looked-ahead point theta - lr mu v (Nesterov 1983; Sutskever et al.,
/// ICML 2013, eq. 3-4; Bengio, Boulanger-Lewandowski & Pascanu 2013).
struct Nesterov {
  /// Learning rate, > 0.
  double lr = 0.01;
  /// Momentum coefficient mu in [0, 1).
  double momentum = 0.9;

  static const char* name() { return "nesterov"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const {
    detail::require_positive("Nesterov", "learning rate lr", lr);
    detail::require_unit_interval("Nesterov", "momentum", momentum);
  }
  /// One state vector: the velocity v.
  static int state_size(int /*num_parameters*/) { return 1; }

  template <class Context>
  void update(Context& ctx) {
    detail::momentum_update<true>(ctx, lr, momentum, "gradsum::optimizer::nesterov");
  }
};

}  // namespace gradsum
