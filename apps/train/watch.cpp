// SPDX-License-Identifier: Apache-2.0
// gradsum-train's worker watch and noise scale reports.

#include "watch.hpp"

#include <algorithm>
#include <cmath>

namespace gradsum_train {

int watched_parts(const Options& o, int ranks) {
  if (o.accumulate > 1) return o.accumulate;
  if (o.noise_parts > 0) return o.noise_parts;
  return ranks > 1 ? 1 : o.workers;
}

WorkerWatch::WorkerWatch(const Printer& say, const Options& o, int ranks, std::int64_t rows)
    : say_(say), parts_(watched_parts(o, ranks)), ranks_(ranks), rows_(rows),
      fixed_rows_(o.batch == 0 && o.accumulate == 1), workers_(std::size_t(parts_ * ranks)) {}

void WorkerWatch::on_step(gradsum::FitState& s) {
  const auto& r = s.result;
  for (std::size_t w = 0; w < r.worker_ratios.size() && w < workers_.size(); ++w) {
    const double ratio = r.worker_ratios[w];
    if (std::isnan(ratio)) continue;
    Tally& t = workers_[w];
    ++t.steps;
    t.max_ratio = std::max(t.max_ratio, ratio);
  }
  for (int w : r.outliers) {
    ++workers_[std::size_t(w)].named;
    say_("outlier worker=%d step=%lld ratio=%.3g\n", w, static_cast<long long>(s.position.step),
         r.worker_ratios[std::size_t(w)]);
  }
}

void WorkerWatch::summary() const {
  say_("workers watched: %zu (%s)\n", workers_.size(),
       ranks_ > 1 && parts_ == 1 ? "the ranks" : "parts of every rank's batch");
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    const Tally& t = workers_[w];
    say_("worker %zu: named in %lld of %lld steps, max ratio %.3g", w,
         static_cast<long long>(t.named), static_cast<long long>(t.steps), t.max_ratio);
    if (fixed_rows_) {
      const int rank = int(w) / parts_, part = int(w) % parts_;
      const auto rows = gradsum::partition(gradsum::partition(rows_, ranks_, rank), parts_, part);
      say_(", training rows [%lld, %lld)", static_cast<long long>(rows.begin),
           static_cast<long long>(rows.end));
    }
    say_("\n");
  }
}

void report_noise(const Printer& say, const gradsum::FitResult& fitted, double batch) {
  say("mini-batches: loss average %.6g (last batch %.6g, spread over %lld workers %.3g); "
      "gradient noise scale B_noise=%.4g (tr(Sigma)=%.6g, |G|^2=%.6g, averaged over updates)\n",
      fitted.loss_average, fitted.last.loss, static_cast<long long>(fitted.last.workers),
      fitted.last.worker_loss_spread, fitted.noise_scale, fitted.noise_trace,
      fitted.gradient_norm2);
  if (!(fitted.noise_scale > 0 && std::isfinite(fitted.noise_scale))) return;
  say("advice: batches up to about B_noise=%.4g samples cut the steps almost in proportion "
      "(steps ~ 1 + B_noise / B); this run's batch of %.0f is %s it; size a cluster with "
      "gradsum-train --plan ... --noise-scale %.4g\n",
      fitted.noise_scale, batch, batch < fitted.noise_scale ? "below" : "past", fitted.noise_scale);
}

}  // namespace gradsum_train
