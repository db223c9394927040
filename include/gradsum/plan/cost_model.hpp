// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace gradsum {
namespace plan {

/// What one training job costs on one worker, in the units the cost model
/// adds up: samples, seconds and bytes.
///
/// `seconds_per_sample` comes from a calibration run of the actual step
/// (plan::calibrate) or from the user. One "sample" is whatever a step's
/// batch counts: a row of a table, a review, a token.
struct Workload {
  /// Samples in one pass over the data (the data set size), >= 1.
  double samples_per_epoch = 0;
  /// Global mini-batch size B (samples per step over all workers), >= 1.
  double batch = 0;
  /// Passes over the data in one training run, > 0.
  double epochs = 1;
  /// Compute time of one sample on one worker (forward, loss, backward),
  /// > 0 seconds.
  double seconds_per_sample = 0;
  /// Bytes the workers sum per step (P parameters × bytes per value), >= 0.
  double gradient_bytes = 0;
  /// Fixed cost of a step whatever the batch (kernel launches, optimizer
  /// update, host round trips), >= 0 seconds.
  double overhead_seconds = 0;

  /// Rejects values the model cannot use, naming the field and the value.
  void validate() const {
    check("samples_per_epoch", samples_per_epoch, 1, "at least 1");
    check("batch", batch, 1, "at least 1");
    if (!(epochs > 0) || !std::isfinite(epochs))
      fail("gradsum::plan::Workload: epochs must be positive and finite, got ", epochs);
    if (!(seconds_per_sample > 0) || !std::isfinite(seconds_per_sample))
      fail("gradsum::plan::Workload: seconds_per_sample must be positive and finite, got ",
                   seconds_per_sample);
    check("gradient_bytes", gradient_bytes, 0, "non-negative");
    check("overhead_seconds", overhead_seconds, 0, "non-negative");
  }

 private:
  static void check(const char* field, double value, double lo, const char* expected) {
    if (!(value >= lo) || !std::isfinite(value))
      fail("gradsum::plan::Workload: ", field, " must be ", expected, " and finite, got ",
                   value);
  }
};

/// The link between workers as a ring allreduce sees it.
struct Network {
  /// Bytes per second one worker sends (and receives) at once, > 0.
  double bandwidth = 0;
  /// Seconds per message (start-up cost of one ring step), >= 0.
  double latency = 0;

  /// Rejects values the model cannot use, naming the field and the value.
  void validate() const {
    if (!(bandwidth > 0) || !std::isfinite(bandwidth))
      fail("gradsum::plan::Network: bandwidth must be positive and finite (bytes/s), got ",
                   bandwidth);
    if (!(latency >= 0) || !std::isfinite(latency))
      fail("gradsum::plan::Network: latency must be non-negative and finite (seconds), got ",
                   latency);
  }
};

/// What the decision weighs besides the step: the set-up work distribution
/// needs once, and how often the training is run.
struct Budget {
  /// Largest number of workers to consider (K), in [1, 10^6].
  int max_workers = 1;
  /// One-off cost of distributing (engineering, cluster set-up), in
  /// seconds of the same clock as training time; paid once for any N > 1.
  double setup_seconds = 0;
  /// How many times the training is run (each run takes `epochs` epochs),
  /// >= 1; the set-up is amortised over all of them.
  double runs = 1;

  /// Rejects values the model cannot use, naming the field and the value.
  void validate() const {
    if (max_workers < 1 || max_workers > 1000000)
      fail("gradsum::plan::Budget: max_workers must be in [1, 1000000], got ",
                   max_workers);
    if (!(setup_seconds >= 0) || !std::isfinite(setup_seconds))
      fail("gradsum::plan::Budget: setup_seconds must be non-negative and finite, got ",
                   setup_seconds);
    if (!(runs >= 1) || !std::isfinite(runs))
      fail("gradsum::plan::Budget: runs must be at least 1 and finite, got ", runs);
  }
};

/// The predicted cost of one configuration: N workers.
struct Prediction {
  /// Number of workers N.
  int workers = 1;
  /// Compute time of the slowest worker per step: ceil(B / N) samples.
  double compute_seconds = 0;
  /// Ring allreduce per step: 2 (N-1)/N bytes / bandwidth + 2 (N-1) latency.
  double communication_seconds = 0;
  /// Fixed per-step overhead.
  double overhead_seconds = 0;
  /// compute + communication + overhead.
  double step_seconds = 0;
  /// ceil(samples_per_epoch / B) steps.
  double epoch_seconds = 0;
  /// epochs × epoch_seconds: one training run.
  double training_seconds = 0;
  /// runs × training_seconds, plus the set-up cost when N > 1.
  double total_seconds = 0;
  /// step_seconds(1) / step_seconds(N).
  double speedup = 1;
  /// speedup / N.
  double efficiency = 1;
  /// communication_seconds / step_seconds.
  double communication_share = 0;
};

/// The predictions for N = 1 … K and what follows from them.
struct Plan {
  /// predictions[N - 1] is the configuration with N workers.
  std::vector<Prediction> predictions;
  /// The N in 1 … K with the shortest step (the smallest such N on ties).
  int best_workers = 1;
  /// The smallest N > 1 whose step is shorter than one worker's (speedup
  /// above 1), or 0 when no N <= K is.
  int break_even_workers = 0;
  /// Training runs after which the set-up cost is paid back by the time
  /// best_workers saves per run: setup / (training(1) - training(best));
  /// 0 without a set-up cost, infinity when distributing saves nothing.
  double break_even_runs = 0;
  /// Whether distributing pays: total_seconds(best_workers) (set-up
  /// included) is below total_seconds(1).
  bool distribute = false;

  /// The prediction for N workers, 1 <= N <= K.
  const Prediction& at(int workers) const {
    if (workers < 1 || workers > int(predictions.size()))
      fail("gradsum::plan::Plan::at: workers must be in [1, ", predictions.size(),
                   "], got ", workers);
    return predictions[std::size_t(workers) - 1];
  }
  /// The recommended configuration: best_workers when distributing pays,
  /// else one worker.
  const Prediction& recommended() const { return at(distribute ? best_workers : 1); }
};

/// Ring-allreduce time of `bytes` over `workers` workers (Patarasuk and
/// Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
/// workstations", JPDC 2009): a reduce-scatter and an all-gather of N-1
/// steps each, every step moving bytes/N:
///
///     T = 2 (N-1)/N · bytes / bandwidth + 2 (N-1) · latency,
///
/// and 0 for one worker.
inline double ring_allreduce_seconds(const Network& network, double bytes, int workers) {
  network.validate();
  if (workers < 1)
    fail("gradsum::plan::ring_allreduce_seconds: workers must be at least 1, got ",
                 workers);
  if (!(bytes >= 0) || !std::isfinite(bytes))
    fail("gradsum::plan::ring_allreduce_seconds: bytes must be non-negative and finite, "
                 "got ", bytes);
  const double n = workers;
  return 2 * (n - 1) / n * bytes / network.bandwidth + 2 * (n - 1) * network.latency;
}

/// The cost of one step, one epoch and one run on `workers` workers:
///
///     step(N) = seconds_per_sample · ceil(B / N) + ring_allreduce(N) + overhead
///
/// (the slowest worker holds ceil(B / N) of the batch); `total_seconds`
/// counts every run and, for N > 1, the set-up cost. speedup and
/// efficiency are relative to one worker.
inline Prediction predict(const Workload& work, const Network& network, int workers,
                          const Budget& budget = {}) {
  work.validate();
  network.validate();
  if (workers < 1)
    fail("gradsum::plan::predict: workers must be at least 1, got ", workers);
  Budget b = budget;
  if (b.max_workers < workers) b.max_workers = workers;
  b.validate();
  auto step_of = [&](int n, Prediction& p) {
    p.workers = n;
    p.compute_seconds = work.seconds_per_sample * std::ceil(work.batch / n);
    p.communication_seconds = ring_allreduce_seconds(network, work.gradient_bytes, n);
    p.overhead_seconds = work.overhead_seconds;
    p.step_seconds = p.compute_seconds + p.communication_seconds + p.overhead_seconds;
    p.epoch_seconds = std::ceil(work.samples_per_epoch / work.batch) * p.step_seconds;
    p.training_seconds = work.epochs * p.epoch_seconds;
    p.total_seconds = b.runs * p.training_seconds + (n > 1 ? b.setup_seconds : 0.0);
    p.communication_share = p.communication_seconds / p.step_seconds;
  };
  Prediction one, p;
  step_of(1, one);
  step_of(workers, p);
  p.speedup = one.step_seconds / p.step_seconds;
  p.efficiency = p.speedup / workers;
  return p;
}

/// Predictions for N = 1 … budget.max_workers, the fastest N, the
/// break-even points, and whether distributing pays once the set-up cost
/// and the number of runs are counted. Throws gradsum::Error naming the
/// first invalid field.
inline Plan make_plan(const Workload& work, const Network& network, const Budget& budget) {
  work.validate();
  network.validate();
  budget.validate();
  Plan plan;
  plan.predictions.reserve(std::size_t(budget.max_workers));
  for (int n = 1; n <= budget.max_workers; ++n)
    plan.predictions.push_back(predict(work, network, n, budget));
  const auto& one = plan.predictions.front();
  for (const auto& p : plan.predictions) {
    if (p.step_seconds < plan.at(plan.best_workers).step_seconds) plan.best_workers = p.workers;
    if (plan.break_even_workers == 0 && p.workers > 1 && p.step_seconds < one.step_seconds)
      plan.break_even_workers = p.workers;
  }
  const auto& best = plan.at(plan.best_workers);
  const double saved_per_run = one.training_seconds - best.training_seconds;
  if (budget.setup_seconds == 0)
    plan.break_even_runs = 0;
  else if (saved_per_run > 0)
    plan.break_even_runs = budget.setup_seconds / saved_per_run;
  else
    plan.break_even_runs = std::numeric_limits<double>::infinity();
  plan.distribute = plan.best_workers > 1 && best.total_seconds < one.total_seconds;
  return plan;
}

}  // namespace plan
}  // namespace gradsum
