// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

#include <limits>

namespace gradsum {

/// Global-norm gradient clipping in front of any optimizer: before each
/// update the aggregated gradient g of J is replaced by
///
///     g * min(1, max_norm / ||g||),
///
/// so the update starts from a gradient of norm at most max_norm, with its
/// direction kept (Pascanu, Mikolov & Bengio, ICML 2013). Every worker holds
/// the same aggregated g, so every worker clips alike. The step's
/// gradient() shows the clipped vector afterwards. Optimizers that
/// evaluate J again during their update (line searches) see unclipped
/// gradients at the new points: clipping is for first-order methods.
template <class Optimizer>
struct Clipped {
  Optimizer optimizer;
  /// Largest gradient norm passed on, > 0; +infinity disables clipping.
  double max_norm = std::numeric_limits<double>::infinity();
  /// Updates whose gradient was scaled down so far.
  std::int64_t clipped_updates = 0;

  /// The wrapped optimizer's name: clipping is a run-time knob.
  const char* name() const { return optimizer.name(); }
  /// Elementwise when the wrapped optimizer is: the norm is the whole
  /// gradient's, from the context's result().
  static constexpr bool elementwise = detail::is_elementwise<Optimizer>::value;
  void validate() const {
    optimizer.validate();
    if (!(max_norm > 0))
      fail("gradsum::Clipped: max_norm must be positive, got ", max_norm);
  }
  int state_size(int num_parameters) const { return optimizer.state_size(num_parameters); }
  /// The wrapped optimizer's state row of squares (-1: none).
  int squares_row() const { return detail::squares_row(optimizer); }

  template <class Context>
  void update(Context& ctx) {
    const double norm = ctx.result().gradient_norm;
    if (norm > max_norm) {
      using Scalar = typename Context::scalar_type;
      const Scalar scale = Scalar(max_norm / norm);
      auto g = ctx.gradient();
      Kokkos::parallel_for(
          "gradsum::optimizer::clip", ctx.policy(), KOKKOS_LAMBDA(int j) { g(j) *= scale; });
      ++clipped_updates;
    }
    optimizer.update(ctx);
  }
};

/// Clipped(optimizer, max_norm) with the optimizer's type deduced.
template <class Optimizer>
Clipped<Optimizer> clip_gradient_norm(const Optimizer& optimizer, double max_norm) {
  return Clipped<Optimizer>{optimizer, max_norm};
}

}  // namespace gradsum
