// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/data/rows.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace gradsum {
namespace plan {

/// What a calibration run measured: the time of a step as a straight line
/// in the batch size, t(B) = overhead_seconds + seconds_per_sample · B.
struct Calibration {
  /// Slope: compute time per sample on this worker.
  double seconds_per_sample = 0;
  /// Intercept: the part of a step that does not grow with the batch
  /// (0 when noise made the fitted intercept negative).
  double overhead_seconds = 0;
  /// The two batch sizes timed and their best step times.
  std::int64_t small_batch = 0, large_batch = 0;
  double small_seconds = 0, large_seconds = 0;
};

namespace detail {

// Consecutive batches of the data set, wrapping around, as an epoch of
// training reads them: a batch is not served from cache just because the
// previous step read the same rows.
template <class Step, class Theta, class Data>
double best_step_seconds(Step& step, const Theta& theta, const Data& data, std::int64_t batch,
                         int repetitions) {
  using Clock = std::chrono::steady_clock;
  std::int64_t begin = 0;
  auto next = [&] {
    if (begin + batch > data.num_samples()) begin = 0;
    const RowRange rows{begin, begin + batch};
    begin += batch;
    return rows;
  };
  step(theta, data, next());  // warm-up: first touch, data check
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    const RowRange rows = next();
    const auto start = Clock::now();
    step(theta, data, rows);  // blocking: returns host values
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    best = r == 0 ? t : std::min(best, t);
  }
  return best;
}

}  // namespace detail

/// Calibrates the cost model on this machine by timing the actual step:
/// `step(theta, data, rows)` on consecutive batches of `small_batch` and
/// of `large_batch` rows of `data` (wrapping around at its end, as an
/// epoch reads them, so that a data set larger than the caches is read
/// from memory), best of `repetitions` each after one warm-up, and fits t(B) = overhead + seconds_per_sample · B through the
/// two points. The step updates `theta` as in training.
///
/// Blocking; collective when the step's aggregation is (every rank then
/// calibrates on its own rows). Throws gradsum::Error when the sizes are
/// out of range or the time did not grow with the batch (batches too
/// small to time: choose larger ones).
template <class Step, class Theta, class Data>
Calibration calibrate(Step& step, const Theta& theta, const Data& data, std::int64_t small_batch,
                      std::int64_t large_batch, int repetitions = 5) {
  if (small_batch < 1)
    fail("gradsum::plan::calibrate: small_batch must be at least 1, got ",
                          small_batch);
  if (large_batch <= small_batch || large_batch > data.num_samples())
    fail("gradsum::plan::calibrate: large_batch must be in (small_batch = ",
                          small_batch, ", number of samples = ", data.num_samples(), "], got ",
                          large_batch);
  if (repetitions < 1)
    fail("gradsum::plan::calibrate: repetitions must be at least 1, got ",
                          repetitions);
  Calibration c;
  c.small_batch = small_batch;
  c.large_batch = large_batch;
  c.small_seconds = detail::best_step_seconds(step, theta, data, small_batch, repetitions);
  c.large_seconds = detail::best_step_seconds(step, theta, data, large_batch, repetitions);
  c.seconds_per_sample = (c.large_seconds - c.small_seconds) / double(large_batch - small_batch);
  if (!(c.seconds_per_sample > 0))
    fail("gradsum::plan::calibrate: a step on ", large_batch,
                          " samples took ", c.large_seconds, " s, no longer than on ",
                          small_batch, " samples (", c.small_seconds,
                          " s); choose batches whose step times differ clearly");
  c.overhead_seconds =
      std::max(0.0, c.small_seconds - c.seconds_per_sample * double(small_batch));
  return c;
}

}  // namespace plan
}  // namespace gradsum
