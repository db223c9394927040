// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Smoothing over steps for what a step measures about its mini-batches:
/// the moving average of the mini-batch loss and the gradient noise scale
/// B_noise = tr(Sigma) / ||G||^2 (McCandlish, Kaplan, Amodei et al., "An
/// Empirical Model of Large-Batch Training", arXiv:1812.06162, 2018).

#include <gradsum/core/error.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace gradsum {

/// An exponentially weighted moving average whose weights are normalised,
///
///     value = sum_i decay^(t-i) x_i / sum_i decay^(t-i),
///
/// so it is the first value itself after one value (no pull towards zero,
/// the bias that Adam corrects for). Non-finite values are ignored.
class MovingAverage {
 public:
  /// `decay` in [0, 1): 0 keeps only the last value; 0.9 averages over
  /// about the last ten.
  explicit MovingAverage(double decay = 0.9) : decay_(decay) {
    if (!(decay >= 0 && decay < 1))
      fail("gradsum::MovingAverage: decay must be in [0, 1), got ", decay);
  }
  void add(double x) {
    if (!std::isfinite(x)) return;
    sum_ = decay_ * sum_ + x;
    weight_ = decay_ * weight_ + 1;
  }
  /// The average, NaN before the first finite value.
  double value() const { return weight_ > 0 ? sum_ / weight_ : std::nan(""); }
  double decay() const { return decay_; }

  /// Appends the state (two values) to `out`.
  void save_state(std::vector<double>& out) const { out.insert(out.end(), {sum_, weight_}); }
  /// Reads back two values written by save_state from in[at …], checked
  /// first (a weight >= 0 and finite, a sum that is not NaN, and 0 while
  /// the weight is).
  void restore_state(const std::vector<double>& in, std::size_t& at) {
    if (at > in.size() || in.size() - at < 2)
      fail("gradsum::MovingAverage: the saved state ends at value ",
                   in.size(), ", two values expected from value ", at);
    const double sum = detail::restored_number(in[at], "gradsum::MovingAverage: the saved sum",
                                               -HUGE_VAL, HUGE_VAL);
    const double weight = detail::restored_number(
        in[at + 1], "gradsum::MovingAverage: the saved weight", 0,
        std::numeric_limits<double>::max());
    if (weight == 0 && sum != 0)
      fail("gradsum::MovingAverage: the saved sum is ", sum,
                   " with weight 0, expected 0 (no value yet)");
    sum_ = sum;
    weight_ = weight;
    at += 2;
  }

 private:
  double decay_;
  double sum_ = 0, weight_ = 0;
};

/// The gradient noise scale B_noise = tr(Sigma) / ||G||^2 over training: the
/// per-step unbiased estimates of tr(Sigma) and ||G||^2 that a step
/// measuring its workers reports (StepResult::noise_trace and
/// gradient_norm2_estimate, see Step::measure_workers) are each averaged
/// over steps, then divided: the ratio of averages, as McCandlish et al.
/// recommend, since a single step's ||G||^2 estimate is noisy and may be
/// negative.
///
/// B_noise is the batch size around which larger batches stop buying
/// proportionally fewer steps: steps S and samples E to a given loss
/// follow S = S_min (1 + B_noise / B) and E = E_min (1 + B / B_noise).
class NoiseScale {
 public:
  explicit NoiseScale(double decay = 0.9) : trace_(decay), norm2_(decay) {}

  /// Adds a step's estimates; steps without them (fewer than two workers,
  /// not measuring, skipped) are ignored.
  void add(const StepResult& result) {
    if (!std::isfinite(result.noise_trace) || !std::isfinite(result.gradient_norm2_estimate))
      return;
    trace_.add(result.noise_trace);
    norm2_.add(result.gradient_norm2_estimate);
  }
  /// Averaged tr(Sigma): the per-sample gradient variance, summed.
  double trace() const { return trace_.value(); }
  /// Averaged ||G||^2.
  double gradient_norm2() const { return norm2_.value(); }
  /// trace() / gradient_norm2(); NaN before any estimate, infinity when
  /// the averaged ||G||^2 is not positive (noise dominates: the gradient
  /// is indistinguishable from zero at these batch sizes).
  double value() const {
    const double g2 = gradient_norm2(), t = trace();
    if (!std::isfinite(g2) || !std::isfinite(t)) return std::nan("");
    return g2 > 0 ? t / g2 : std::numeric_limits<double>::infinity();
  }

  void save_state(std::vector<double>& out) const {
    trace_.save_state(out);
    norm2_.save_state(out);
  }
  void restore_state(const std::vector<double>& in, std::size_t& at) {
    trace_.restore_state(in, at);
    norm2_.restore_state(in, at);
  }

 private:
  MovingAverage trace_, norm2_;
};

}  // namespace gradsum
