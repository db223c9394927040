// SPDX-License-Identifier: Apache-2.0
#pragma once

// --watch-workers and --noise-scale: the workers compared every step, the
// outliers named, and the gradient noise scale measured over the run.

#include "context.hpp"

#include <cstdint>
#include <vector>

namespace gradsum_train {

/// --watch-workers: the parts of every rank's batch compared (see --help).
int watched_parts(const Options& o, int ranks);

/// Prints every outlier the step names and, at the end, how often each
/// worker was named (the step's ratios: train/detail/worker_watch.hpp).
class WorkerWatch : public gradsum::Callback {
 public:
  WorkerWatch(const Printer& say, const Options& o, int ranks, std::int64_t rows);
  void on_step(gradsum::FitState& s) override;
  /// The workers, their number, and the rows each holds when that is fixed
  /// (full batch, stored order).
  void summary() const;

 private:
  struct Tally {
    std::int64_t steps = 0, named = 0;
    double max_ratio = 0;
  };
  const Printer& say_;
  int parts_, ranks_;
  std::int64_t rows_;
  bool fixed_rows_;
  std::vector<Tally> workers_;
};

/// Sets the step to measure (--noise-scale) and compare (--watch-workers)
/// its workers, after checking that there are enough of them.
template <class Step>
void prepare_workers(Step& step, const Options& o, int ranks) {
  if (o.noise_parts > 0) {
    if (ranks * o.noise_parts < 2)
      gradsum::fail_agreed("--noise-scale 1 on one rank measures a single worker; the noise "
                           "scale compares at least two (use --noise-scale 2 or more)");
    step.measure_workers(o.noise_parts);
  }
  if (o.watch_workers) {
    const int parts = watched_parts(o, ranks);
    if (std::int64_t(parts) * ranks < 3)
      gradsum::fail_agreed("--watch-workers: compares 3 workers or more, this run has ",
                           parts * ranks, " (", ranks, ranks == 1 ? " rank" : " ranks", " x ",
                           parts, "); run on 3 ranks or more, or on one rank with --workers 3 or more");
    step.watch_workers(parts);
  }
}

/// --noise-scale: the workers' losses, the gradient noise scale, and what
/// it says about this run's batch of `batch` samples.
void report_noise(const Printer& say, const gradsum::FitResult& fitted, double batch);

}  // namespace gradsum_train
