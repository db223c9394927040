// SPDX-License-Identifier: Apache-2.0
#pragma once

// Line searches along a direction d from the parameters x0: Armijo
// backtracking and the strong Wolfe conditions (Nocedal & Wright,
// Numerical Optimization, 2nd ed., Algorithms 3.1, 3.5 and 3.6, with
// bisection in the zoom). Near a minimum the decrease c1 t g.d falls below
// the rounding of J itself, so the sufficient-decrease test allows J to
// rise by 1e-14 |J(x0)|, as in the approximate Wolfe conditions of Hager &
// Zhang (SIAM J. Optim. 16(1), 2005). Every trial is a collective evaluation of J, so
// every rank takes the same decisions. The last point evaluated is the one
// accepted, so the step's gradient is the gradient there afterwards.

#include <gradsum/core/error.hpp>
#include <gradsum/optimizer/detail/vector_ops.hpp>

#include <cmath>

namespace gradsum {
namespace detail {

/// Where the line search ended: the step length t and J(x0 + t d).
struct LineSearchResult {
  double step = 0;
  double value = 0;
};

/// Finds t with J(x0 + t d) <= J(x0) + c1 t g0.d by halving t from
/// `initial`; writes x0 + t d into `trial`. Throws if `max_trials` halvings
/// do not decrease J enough (the direction is not a descent direction or
/// the objective is not finite).
/// Whether f is a sufficient decrease from f0 for step t along slope.
inline bool sufficient_decrease(double f, double f0, double t, double slope, double c1) {
  return std::isfinite(f) && f <= f0 + c1 * t * slope + 1e-14 * std::fabs(f0);
}

template <class Context, class Trial, class X0, class D>
LineSearchResult armijo(Context& ctx, const char* policy, const Trial& trial, const X0& x0,
                        const D& d, double f0, double slope, double initial, double c1,
                        int max_trials) {
  const int n = ctx.num_parameters();
  if (!(slope < 0))
    fail("gradsum::", policy, ": the search direction is not a descent direction (g.d = ",
         slope, ")");
  double t = initial;
  for (int trial_index = 0; trial_index < max_trials; ++trial_index, t *= 0.5) {
    add_scaled(ctx.space(), n, trial, x0, t, d);
    const double f = ctx.evaluate(trial).loss;
    if (sufficient_decrease(f, f0, t, slope, c1)) return {t, f};
  }
  fail("gradsum::", policy, ": the Armijo line search found no decrease of the objective in ",
       max_trials, " halvings from step ", initial);
}

/// Finds t meeting the strong Wolfe conditions
///     J(x0 + t d) <= J(x0) + c1 t g0.d   and   |g(x0 + t d).d| <= c2 |g0.d|;
/// writes x0 + t d into `trial`; the gradient there is ctx.gradient().
template <class Context, class Trial, class X0, class D>
LineSearchResult strong_wolfe(Context& ctx, const char* policy, const Trial& trial,
                              const X0& x0, const D& d, double f0, double slope,
                              double initial, double c1, double c2, int max_trials) {
  const int n = ctx.num_parameters();
  if (!(slope < 0))
    fail("gradsum::", policy, ": the search direction is not a descent direction (g.d = ",
         slope, ")");
  auto phi = [&](double t, double& derivative) {
    add_scaled(ctx.space(), n, trial, x0, t, d);
    const double f = ctx.evaluate(trial).loss;
    derivative = dot(ctx.space(), n, ctx.gradient(), d);
    return f;
  };
  int evaluations = 0;
  auto zoom = [&](double lo, double f_lo, double hi) -> LineSearchResult {
    while (evaluations < max_trials) {
      const double t = (lo + hi) / 2;
      double dphi = 0;
      const double f = phi(t, dphi);
      ++evaluations;
      if (!sufficient_decrease(f, f0, t, slope, c1) || f > f_lo) {
        hi = t;
      } else {
        if (std::fabs(dphi) <= -c2 * slope) return {t, f};
        if (dphi * (hi - lo) >= 0) hi = lo;
        lo = t;
        f_lo = f;
      }
    }
    fail("gradsum::", policy, ": the strong Wolfe line search did not converge in ",
         max_trials, " evaluations");
  };
  double t_prev = 0, f_prev = f0, t = initial;
  while (evaluations < max_trials) {
    double dphi = 0;
    const double f = phi(t, dphi);
    ++evaluations;
    if (!sufficient_decrease(f, f0, t, slope, c1) || (evaluations > 1 && f > f_prev))
      return zoom(t_prev, f_prev, t);
    if (std::fabs(dphi) <= -c2 * slope) return {t, f};
    if (dphi >= 0) return zoom(t, f, t_prev);
    t_prev = t;
    f_prev = f;
    t *= 2;
  }
  fail("gradsum::", policy, ": the strong Wolfe line search did not converge in ", max_trials,
       " evaluations");
}

}  // namespace detail
}  // namespace gradsum
