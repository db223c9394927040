// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/detail/line_search.hpp>
#include <gradsum/optimizer/detail/vector_ops.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {
namespace detail {

/// L-BFGS's new pair: s = ts d, y = g - g0. A free function: nvcc takes
/// no device lambda in a private member.
template <class Policy, class S, class Y, class Scalar, class D, class G, class G0>
void lbfgs_pair(const Policy& policy, const S& s, const Y& y, Scalar ts, const D& direction,
                const G& g, const G0& g0) {
  Kokkos::parallel_for(
      "gradsum::optimizer::lbfgs::pair", policy, KOKKOS_LAMBDA(int j) {
        s(j) = ts * direction(j);
        y(j) = g(j) - g0(j);
      });
}

}  // namespace detail

/// Limited-memory BFGS (Liu & Nocedal, Math. Programming 45, 1989;
/// Nocedal & Wright, Numerical Optimization, 2nd ed., Algorithm 7.4 and 7.5):
/// the direction d = -H_k g comes from the two-loop recursion over the last
/// `m` pairs s = theta_{k+1} - theta_k, y = g_{k+1} - g_k, with initial
/// scaling gamma = s.y / y.y; the step from a strong Wolfe (default) or
/// Armijo line search starting at t = 1. A pair with s.y <= 1e-10 y.y
/// (curvature condition violated) is skipped. Vectors stay in the
/// execution space; only scalars live on the host.
struct LBFGS {
  enum class LineSearch { wolfe, armijo };
  int m = 10;                                  ///< pairs kept, >= 1
  LineSearch line_search = LineSearch::wolfe;
  double c1 = 1e-4;                            ///< sufficient decrease, in (0, c2)
  double c2 = 0.9;                             ///< curvature (Wolfe), in (c1, 1)
  int max_trials = 40;                         ///< evaluations per line search

  static const char* name() { return "lbfgs"; }
  void validate() const {
    if (m < 1) fail("gradsum::LBFGS: history m must be >= 1, got ", m);
    if (!(c1 > 0 && c1 < c2 && c2 < 1))
      fail("gradsum::LBFGS: need 0 < c1 < c2 < 1, got c1 = ", c1, ", c2 = ", c2);
    if (max_trials < 1)
      fail("gradsum::LBFGS: max_trials must be >= 1, got ", max_trials);
  }
  /// 2m history vectors, then direction, start point, start gradient, trial.
  int state_size(int /*num_parameters*/) const { return 2 * m + 4; }

  template <class Context>
  void update(Context& ctx) {
    const int P = ctx.num_parameters();
    const auto& space = ctx.space();
    auto state = ctx.state();
    auto direction = detail::row(state, 2 * m);
    auto x0 = detail::row(state, 2 * m + 1);
    auto g0 = detail::row(state, 2 * m + 2);
    auto trial = detail::row(state, 2 * m + 3);
    const auto theta = ctx.parameters();
    detail::assign(space, P, x0, theta);
    detail::assign(space, P, g0, ctx.gradient());
    if (rho_.size() != std::size_t(m)) rho_.assign(std::size_t(m), 0.0), alpha_ = rho_;
    const double slope = descend(space, P, state, g0, direction);
    if (slope == 0) return;  // g = 0: a critical point
    double step = 0;
    if (!search(ctx, trial, x0, direction, slope, step)) return;
    detail::assign(space, P, theta, trial);
    remember_pair(ctx, step, direction, g0);
  }

  /// Updates in which no step could be certified (theta unchanged).
  std::int64_t stalls() const { return stalls_; }

  /// The history bookkeeping kept on the host (where the next pair goes,
  /// pairs held, stalls, the m values rho = 1 / s.y), for checkpoints.
  std::vector<double> host_state() const {
    std::vector<double> v{double(head_), double(stored_), double(stalls_)};
    v.resize(3 + std::size_t(m), 0.0);
    for (std::size_t i = 0; i < rho_.size() && i < std::size_t(m); ++i) v[3 + i] = rho_[i];
    return v;
  }
  /// Restores what host_state() returned (same m). The values come from a
  /// file: all are checked before any is used (head in [0, m), pairs held
  /// in [0, m], every rho >= 0, those of the pairs held > 0); throws
  /// gradsum::Error naming the value otherwise (the caller names the file).
  void restore_host_state(const std::vector<double>& v) {
    const std::size_t n = 3 + std::size_t(m);
    if (v.size() != n)
      fail("L-BFGS's saved history holds ", v.size(), " values, expected 3 + m = ", n);
    const int head = int(detail::restored_count(v[0], "L-BFGS's saved history head", 0, m - 1));
    const int stored = int(detail::restored_count(v[1], "L-BFGS's saved number of pairs held",
                                                  0, m));
    const std::int64_t stalls = detail::restored_count(v[2], "L-BFGS's saved stall count");
    for (int i = 0; i < m; ++i)
      detail::restored_number(v[3 + std::size_t(i)],
                              detail::concat("L-BFGS's saved rho of slot ", i), 0, HUGE_VAL);
    for (int k = 0; k < stored; ++k) {  // a pair held has rho = 1 / s.y with s.y > 0
      const int slot = (head - 1 - k + m) % m;
      if (v[3 + std::size_t(slot)] == 0)
        fail("L-BFGS's saved rho of slot ", slot, " (a pair held) is 0, expected "
                     "1 / s.y > 0");
    }
    head_ = head;
    stored_ = stored;
    stalls_ = stalls;
    rho_.assign(v.begin() + 3, v.end());
    alpha_.assign(rho_.size(), 0.0);
  }

 private:
  template <class ExecutionSpace, class V>
  static void scale(const ExecutionSpace& space, int n, const V& v, double factor) {
    detail::add_scaled(space, n, v, v, factor - 1.0, v);
  }

  /// Sets `direction` to -H g0 by the two-loop recursion and returns the
  /// slope g0.d; -g0 instead when rounding has lost descent.
  template <class ExecutionSpace, class State, class V>
  double descend(const ExecutionSpace& space, int P, const State& state, const V& g0,
                 const V& direction) {
    detail::assign(space, P, direction, g0);
    for (int k = 0; k < stored_; ++k) {  // newest to oldest
      const int i = (head_ - 1 - k + m) % m;
      alpha_[i] = rho_[i] * detail::dot(space, P, detail::row(state, i), direction);
      detail::add_scaled(space, P, direction, direction, -alpha_[i], detail::row(state, m + i));
    }
    if (stored_ > 0) {
      const int newest = (head_ - 1 + m) % m;
      const double yy = detail::dot(space, P, detail::row(state, m + newest),
                                    detail::row(state, m + newest));
      scale(space, P, direction, 1.0 / (rho_[newest] * yy));  // gamma = s.y / y.y
    }
    for (int k = stored_ - 1; k >= 0; --k) {  // oldest to newest
      const int i = (head_ - 1 - k + m) % m;
      const double beta = rho_[i] * detail::dot(space, P, detail::row(state, m + i), direction);
      detail::add_scaled(space, P, direction, direction, alpha_[i] - beta, detail::row(state, i));
    }
    scale(space, P, direction, -1.0);
    double slope = detail::dot(space, P, g0, direction);
    if (!(slope < 0)) {  // lost descent (rounding): restart from -g
      stored_ = 0;
      detail::assign(space, P, direction, g0);
      scale(space, P, direction, -1.0);
      slope = detail::dot(space, P, g0, direction);
    }
    return slope;
  }

  /// The line search from x0 along `direction` into `trial`; its step in
  /// `step`. False when no step can be certified (theta stays).
  template <class Context, class V>
  bool search(Context& ctx, const V& trial, const V& x0, const V& direction, double slope,
              double& step) {
    // Without history, the first step is scaled to move theta by at most 1.
    const double initial = stored_ > 0 ? 1.0 : std::fmin(1.0, 1.0 / std::sqrt(-slope));
    try {
      step = (line_search == LineSearch::wolfe
                  ? detail::strong_wolfe(ctx, "LBFGS", trial, x0, direction,
                                         ctx.result().loss, slope, initial, c1, c2, max_trials)
                  : detail::armijo(ctx, "LBFGS", trial, x0, direction, ctx.result().loss,
                                   slope, initial, c1, max_trials))
                 .step;
      return true;
    } catch (const Error&) {
      // At the limit of double precision (J and g.d are rounding noise) no
      // step can be certified: stay at theta, drop the history, and count
      // it. Every rank takes this branch together (the values are
      // aggregated). A stopping rule on the gradient norm or the loss
      // change ends the run.
      ++stalls_;
      stored_ = 0;
      ctx.evaluate(x0);  // the step's gradient is theta's again
      return false;
    }
  }

  /// Keeps the pair s = t d, y = g(trial) - g0 (the last evaluation was at
  /// trial) when it satisfies the curvature condition.
  template <class Context, class V>
  void remember_pair(Context& ctx, double t, const V& direction, const V& g0) {
    const int P = ctx.num_parameters();
    auto state = ctx.state();
    auto s = detail::row(state, head_);
    auto y = detail::row(state, m + head_);
    using Scalar = typename Context::scalar_type;
    detail::lbfgs_pair(ctx.policy(), s, y, Scalar(t), direction, ctx.gradient(), g0);
    const double sy = detail::dot(ctx.space(), P, s, y);
    const double yy = detail::dot(ctx.space(), P, y, y);
    if (sy > 1e-10 * yy && sy > 0) {
      rho_[std::size_t(head_)] = 1.0 / sy;
      head_ = (head_ + 1) % m;
      stored_ = stored_ < m ? stored_ + 1 : m;
    }
  }

  std::vector<double> rho_, alpha_;
  std::int64_t stalls_ = 0;
  int head_ = 0;    // where the next pair goes
  int stored_ = 0;  // pairs held
};

}  // namespace gradsum
