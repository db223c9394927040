// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/cholesky.hpp>
#include <gradsum/optimizer/detail/line_search.hpp>
#include <gradsum/optimizer/detail/vector_ops.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace gradsum {

/// Newton's method with damping and Armijo backtracking:
///
///     (H + lambda I) d = -g,     theta <- theta + t d,
///
/// with H the Hessian of the objective J (mean loss + L2), summed over
/// every worker exactly like the gradient, solved on the host by Cholesky.
/// lambda = 0 when H is positive definite; otherwise it grows from
/// 1e-10 (1 + max |H_jj|) by factors of 10 until the factorisation succeeds
/// (Nocedal & Wright, Numerical Optimization, 2nd ed., sec. 3.4). t starts
/// at `lr` (1 = the full Newton step) and halves until J decreases enough
/// (Armijo, c1 = 1e-4), unless `line_search` is false. Converges
/// quadratically near a minimum; one step solves least squares exactly.
///
/// Needs a model and loss with second derivatives (Linear and Softmax with
/// the library's losses). The Hessian has P^2 entries, accumulated per
/// thread, so P is limited to `max_parameters` (default 1024; above it the
/// update throws, the same way on every rank).
struct Newton {
  double lr = 1.0;             ///< initial step length, > 0
  bool line_search = true;     ///< Armijo backtracking on J
  int max_parameters = 1024;   ///< largest P accepted

  /// The step allocates the P x P Hessian buffers up front.
  static constexpr bool needs_hessian = true;
  static const char* name() { return "newton"; }
  void validate() const {
    detail::require_positive("Newton", "learning rate lr", lr);
    if (max_parameters < 1)
      fail("gradsum::Newton: max_parameters must be >= 1, got ", max_parameters);
  }
  /// Two state vectors: the direction and the trial point.
  static int state_size(int /*num_parameters*/) { return 2; }

  template <class Context>
  void update(Context& ctx) {
    const int P = ctx.num_parameters();
    if (P > max_parameters)
      fail("gradsum::Newton: the model has ", P,
                   " parameters, above the Newton limit of ", max_parameters,
                   " (Newton::max_parameters; the Hessian holds P^2 values per thread); use "
                   "LBFGS for larger models");
    const auto theta = ctx.parameters();
    const std::vector<double>& H = ctx.hessian(theta);
    ctx.to_host(ctx.gradient(), g_);
    d_.resize(g_.size());
    for (std::size_t j = 0; j < g_.size(); ++j) d_[j] = -g_[j];
    solve_damped(H, P, d_);
    auto state = ctx.state();
    auto direction = detail::row(state, 0);
    auto trial = detail::row(state, 1);
    ctx.from_host(d_, direction);
    if (!line_search) {
      detail::add_scaled(ctx.space(), P, theta, theta, lr, direction);
      return;
    }
    double slope = 0;
    for (std::size_t j = 0; j < g_.size(); ++j) slope += g_[j] * d_[j];
    detail::armijo(ctx, "Newton", trial, theta, direction, ctx.result().loss, slope, lr, 1e-4,
                   60);
    detail::assign(ctx.space(), P, theta, trial);
  }

  /// Damping used by the last update (0 when H was positive definite).
  double last_damping() const { return last_damping_; }

 private:
  void solve_damped(const std::vector<double>& H, int P, std::vector<double>& rhs) {
    double scale = 0;
    for (int j = 0; j < P; ++j) scale = std::max(scale, std::fabs(H[std::size_t(j) * P + j]));
    double shift = 0;
    for (int attempt = 0; attempt < 40; ++attempt) {
      if (detail::cholesky(H, P, shift, factor_)) {
        detail::cholesky_solve(factor_, P, rhs);
        last_damping_ = shift;
        return;
      }
      shift = shift == 0 ? 1e-10 * (1 + scale) : shift * 10;
    }
    fail("gradsum::Newton: the Hessian could not be made positive definite "
                 "(it is not finite?)");
  }

  std::vector<double> g_, d_, factor_;  // host work, sized on the first update
  double last_damping_ = 0;
};

}  // namespace gradsum
