// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What a step minimises (Objective), what it does with non-finite values
/// (NonFinite), and what it reports (StepResult).

#include <gradsum/core/error.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {

/// What a step does when the aggregated loss or gradient is not finite
/// (a NaN or infinity from any worker): decided once, after aggregation,
/// the same way on every rank.
enum class NonFinite {
  throw_error,  ///< every rank throws gradsum::Error naming the rank and row
  skip          ///< the parameters stay as they are; the result says so
};

/// The objective the step minimises, and how the summed gradient becomes
/// the gradient the optimizer sees.
///
///     J(theta) = (1/N) sum_i l(f(theta, x_i), y_i) + (l2 / 2) ||W||^2
///
/// with N the global number of samples in the batch (over every worker)
/// and W the regularised parameters (biases excluded). With `mean = false`
/// the sum is not divided by N.
struct Objective {
  /// L2 penalty coefficient, >= 0 and finite.
  double l2 = 0;
  /// Divide the summed loss and gradient once by the global sample count.
  bool mean = true;
  /// What to do with a non-finite loss or gradient.
  NonFinite on_nonfinite = NonFinite::throw_error;

  /// Rejects a negative or non-finite penalty.
  void validate() const {
    if (!(l2 >= 0) || !std::isfinite(l2))
      fail("gradsum::Objective: l2 must be non-negative and finite, "
                   "got ",
                   l2);
  }
};

/// What a step reports; the same on every rank.
struct StepResult {
  /// The objective J at the parameters the gradient was taken at.
  double loss = 0;
  /// Euclidean norm of the gradient of J (what the optimizer used).
  double gradient_norm = 0;
  /// Number of samples in the batch, over all workers.
  std::int64_t count = 0;
  /// True when the loss or gradient was not finite and the step was
  /// skipped (NonFinite::skip): the parameters were not updated.
  bool skipped = false;

  /// Worker statistics, measured after Step::measure_workers(parts): the
  /// workers (parts of every rank's rows) that held samples; the rest are
  /// NaN without measurement or with fewer than two such workers.
  std::int64_t workers = 0;
  /// Standard deviation over the workers of each worker's mean loss (the
  /// objective without its L2 term): how much mini-batch losses scatter.
  double worker_loss_spread = std::nan("");
  /// Unbiased estimate of tr(Sigma), the summed variance of one sample's
  /// loss gradient, from E ||g_b||^2 = ||G||^2 + tr(Sigma) / b at the
  /// workers' batch sizes b_w and the whole batch's B (McCandlish et al.,
  /// "An Empirical Model of Large-Batch Training", 2018):
  ///
  ///     tr(Sigma) = (sum_w ||S_w||^2 / b_w - ||S||^2 / B) / (W - 1),
  ///
  /// with S_w a worker's summed loss gradient and S = sum_w S_w.
  double noise_trace = std::nan("");
  /// Unbiased estimate of ||G||^2, the squared norm of the true gradient
  /// of the mean objective (L2 term included): ||S / B + l2 w||^2 -
  /// tr(Sigma) / B. May come out negative when the gradient is small
  /// against the noise. Their ratio, smoothed over steps, is the gradient
  /// noise scale (NoiseScale).
  double gradient_norm2_estimate = std::nan("");

  /// Outlier workers, measured after Step::watch_workers(parts): each
  /// worker's distance to the workers' robust centre against the typical
  /// worker's (train/detail/worker_watch.hpp), one ratio per worker in
  /// order rank x parts + part (NaN for a worker without samples), and
  /// the workers whose ratio exceeds the threshold. Empty unless watching.
  std::vector<double> worker_ratios = {};
  std::vector<int> outliers = {};
};

}  // namespace gradsum
