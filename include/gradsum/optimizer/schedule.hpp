// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace gradsum {

/// A learning-rate schedule: the factor that multiplies a first-order
/// optimizer's base learning rate at update t = 0, 1, 2, …
///
///     constant:     1
///     step:         gamma^floor(t / every)
///     exponential:  gamma^t
///     cosine:       min + (1 - min) (1 + cos(pi min(t, total) / total)) / 2
///                   (Loshchilov & Hutter, SGDR, ICLR 2017, without restarts)
///
/// and, with `warmup` = W > 0, a linear warm-up first: factor (t + 1) / W for
/// t < W, then the schedule above at t - W (Goyal et al., "Accurate, Large
/// Minibatch SGD", 2017). A run-time value: one optimizer type serves every
/// schedule.
struct Schedule {
  enum class Kind { constant, step, exponential, cosine };
  Kind kind = Kind::constant;
  std::int64_t every = 1;  ///< step: updates between decays, >= 1
  double gamma = 1.0;      ///< step, exponential: factor per decay, in (0, 1]
  std::int64_t total = 1;  ///< cosine: updates to reach the floor, >= 1
  double min_factor = 0;   ///< cosine: the floor, in [0, 1]
  std::int64_t warmup = 0; ///< linear warm-up updates, >= 0

  static Schedule constant() { return {}; }
  static Schedule step_decay(std::int64_t every, double gamma) {
    Schedule s;
    s.kind = Kind::step;
    s.every = every;
    s.gamma = gamma;
    return s;
  }
  static Schedule exponential(double gamma) {
    Schedule s;
    s.kind = Kind::exponential;
    s.gamma = gamma;
    return s;
  }
  static Schedule cosine(std::int64_t total, double min_factor = 0) {
    Schedule s;
    s.kind = Kind::cosine;
    s.total = total;
    s.min_factor = min_factor;
    return s;
  }
  /// This schedule preceded by `steps` updates of linear warm-up.
  Schedule with_warmup(std::int64_t steps) const {
    Schedule s = *this;
    s.warmup = steps;
    return s;
  }

  void validate() const {
    if (every < 1) fail("gradsum::Schedule: every must be >= 1, got ", every);
    if (!(gamma > 0 && gamma <= 1))
      fail("gradsum::Schedule: gamma must be in (0, 1], got ", gamma);
    if (total < 1) fail("gradsum::Schedule: total must be >= 1, got ", total);
    if (!(min_factor >= 0 && min_factor <= 1))
      fail("gradsum::Schedule: min_factor must be in [0, 1], got ", min_factor);
    if (warmup < 0) fail("gradsum::Schedule: warmup must be >= 0, got ", warmup);
  }

  /// The factor at update t >= 0.
  double factor(std::int64_t t) const {
    if (t < warmup) return double(t + 1) / double(warmup);
    const double u = double(t - warmup);
    switch (kind) {
      case Kind::step: return std::pow(gamma, std::floor(u / double(every)));
      case Kind::exponential: return std::pow(gamma, u);
      case Kind::cosine: {
        const double progress = (u < double(total) ? u : double(total)) / double(total);
        return min_factor + (1 - min_factor) * (1 + std::cos(M_PI * progress)) / 2;
      }
      case Kind::constant: break;
    }
    return 1.0;
  }
};

/// Any first-order optimizer (a policy with a public `lr`) whose learning
/// rate follows a Schedule: update t uses lr = base_lr * schedule.factor(t).
template <class Optimizer>
struct Scheduled {
  Optimizer optimizer;
  Schedule schedule;
  std::int64_t t = 0;  ///< updates done so far (saved by checkpoints)

  Scheduled(const Optimizer& o, const Schedule& s)
      : optimizer(o), schedule(s), base_lr_(o.lr) {}

  const char* name() const { return optimizer.name(); }
  /// Elementwise when the wrapped optimizer is.
  static constexpr bool elementwise = detail::is_elementwise<Optimizer>::value;
  void validate() const {
    optimizer.validate();
    schedule.validate();
  }
  int state_size(int num_parameters) const { return optimizer.state_size(num_parameters); }
  /// The wrapped optimizer's state row of squares (-1: none).
  int squares_row() const { return detail::squares_row(optimizer); }
  /// The learning rate the next update will use.
  double current_lr() const { return base_lr_ * schedule.factor(t); }

  template <class Context>
  void update(Context& ctx) {
    optimizer.lr = current_lr();
    optimizer.update(ctx);
    ++t;
  }

 private:
  double base_lr_;
};

}  // namespace gradsum
