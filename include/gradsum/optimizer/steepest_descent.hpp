// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/line_search.hpp>
#include <gradsum/optimizer/detail/vector_ops.hpp>

#include <cmath>
#include <vector>

namespace gradsum {

/// Steepest descent with a line search along d = -g:
///
///  - exact, for quadratic objectives (squared error): t = g.g / g.H g, the
///    minimiser of J along d (Nocedal & Wright, Numerical Optimization,
///    2nd ed., eq. 3.25); successive directions are then orthogonal, the
///    classic zig-zag;
///  - Armijo backtracking otherwise: t halves from `initial_step` until
///    J(theta + t d) <= J(theta) + c1 t g.d.
struct SteepestDescent {
  enum class LineSearch { exact, armijo };
  LineSearch line_search = LineSearch::armijo;
  double initial_step = 1.0;  ///< Armijo: first trial step, > 0
  double c1 = 1e-4;           ///< Armijo: sufficient-decrease constant, in (0, 1)
  int max_trials = 60;        ///< Armijo: halvings before giving up, >= 1

  static const char* name() { return "steepest"; }
  void validate() const {
    detail::require_positive("SteepestDescent", "initial_step", initial_step);
    if (!(c1 > 0 && c1 < 1))
      fail("gradsum::SteepestDescent: c1 must be in (0, 1), got ", c1);
    if (max_trials < 1)
      fail("gradsum::SteepestDescent: max_trials must be >= 1, got ", max_trials);
  }
  /// The exact line search needs the Hessian: the step then allocates its
  /// buffers in its constructor, not in the first step.
  bool uses_hessian() const { return line_search == LineSearch::exact; }
  /// Two state vectors: the direction and the trial point.
  static int state_size(int /*num_parameters*/) { return 2; }

  template <class Context>
  void update(Context& ctx) {
    const int P = ctx.num_parameters();
    const auto theta = ctx.parameters();
    auto state = ctx.state();
    auto direction = detail::row(state, 0);
    auto trial = detail::row(state, 1);
    auto g = ctx.gradient();
    Kokkos::parallel_for(
        "gradsum::optimizer::steepest::direction", ctx.policy(),
        KOKKOS_LAMBDA(int j) { direction(j) = -g(j); });
    const double gg = detail::dot(ctx.space(), P, g, g);
    if (gg == 0) return;  // a critical point: nothing to do
    if (line_search == LineSearch::exact) {
      if (!Context::is_quadratic)
        fail("gradsum::SteepestDescent: exact line search is for quadratic objectives "
                     "(squared error); use LineSearch::armijo");
      const std::vector<double>& H = ctx.hessian(theta);
      ctx.to_host(g, g_);
      double gHg = 0;
      for (int i = 0; i < P; ++i) {
        double row = 0;
        for (int j = 0; j < P; ++j) row += H[std::size_t(i) * P + j] * g_[std::size_t(j)];
        gHg += g_[std::size_t(i)] * row;
      }
      if (!(gHg > 0))
        fail("gradsum::SteepestDescent: g.Hg = ", gHg,
                     " <= 0, the quadratic is not convex along -g");
      last_step_ = gg / gHg;
      detail::add_scaled(ctx.space(), P, theta, theta, last_step_, direction);
      return;
    }
    const auto found = detail::armijo(ctx, "SteepestDescent", trial, theta, direction,
                                      ctx.result().loss, -gg, initial_step, c1, max_trials);
    last_step_ = found.step;
    detail::assign(ctx.space(), P, theta, trial);
  }

  /// The step length t of the last update.
  double last_step() const { return last_step_; }

 private:
  double last_step_ = 0;
  std::vector<double> g_;  // host copy of g, sized on the first exact step
};

}  // namespace gradsum
