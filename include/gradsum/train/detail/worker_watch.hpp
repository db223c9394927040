// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Outlier workers (Step::watch_workers): each worker's gradient is
/// compared with the others' through three numbers per worker that travel
/// in the message the step sends anyway: no gradient, and no collective of
/// its own.
///
/// The score. With g_w = S_w / b_w a worker's mean gradient (S_w its summed
/// loss gradient over b_w samples) and u a direction every rank knows, the
/// gradient of the step's previous evaluation (zero before the first), the
/// projections p_w = g_w . u / ||u|| are known, and the centre
/// c = median_w(p_w) u / ||u|| is a robust point of the workers' cloud: one
/// worker far away moves the median of the projections little. The
/// distance of g_w to c follows exactly from ||S_w||^2 and S_w . u,
///
///     ||g_w - c||^2 = ||g_w||^2 - 2 m p_w + m^2,     m = median(p),
///
/// (with u = 0, m = 0 and the distance is ||g_w||), and
/// z_w = sqrt(b_w) ||g_w - c|| puts workers of any size on the scale of one
/// sample's noise (sampling noise shrinks like 1/sqrt(b_w)). The score is
/// ratio_w = z_w / median_v(z_v); a worker is named when its ratio exceeds
/// the threshold (3 by default). For workers that differ only by sampling
/// noise, z_w is about sqrt(tr Sigma) for every worker, so their ratios
/// stay near 1 unless the gradient has very few dimensions (with one or
/// two, chance alone passes 3 in a few percent of the steps). Near a point
/// where the workers' gradients cancel, one outlier among W workers scores
/// about W - 1: with four workers the ratio then falls to about 3, and the
/// earlier steps are the ones that name it.
///
/// Why the previous gradient and not this step's sum S: S . S_w needs S,
/// known only after the message, so it would cost a copy of every worker's
/// sums, one more pass and a second collective. Between two evaluations the
/// gradient turns little, and any direction common to all ranks gives a
/// valid centre; the first evaluation, with u = 0, compares the norms.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/sum.hpp>
#include <gradsum/train/detail/step_checks.hpp>
#include <gradsum/train/detail/step_message.hpp>
#include <gradsum/train/detail/worker_statistics.hpp>
#include <gradsum/train/objective.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {
namespace detail {

/// The median of `values` (the mean of the two middle ones for an even
/// count); NaN when empty. Takes a copy: it reorders.
inline double median_of(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  const std::size_t n = values.size(), h = n / 2;
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(h), values.end());
  const double upper = values[h];
  if (n % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + std::ptrdiff_t(h)) + upper) / 2;
}

/// The outlier ratios of W workers from their sample counts `b`, squared
/// summed-gradient norms `n` (||S_w||^2), dots `c` (S_w . u) and `u2` =
/// ||u||^2 (the score above). Workers without samples get NaN. Host only.
inline std::vector<double> outlier_ratios(const std::vector<double>& b,
                                          const std::vector<double>& n,
                                          const std::vector<double>& c, double u2) {
  const std::size_t W = b.size();
  std::vector<double> ratio(W, std::nan("")), p, z(W, 0.0), held;
  const double norm = std::sqrt(u2);
  for (std::size_t w = 0; w < W; ++w)
    if (b[w] > 0) p.push_back(norm > 0 ? c[w] / (b[w] * norm) : 0.0);
  if (p.size() < 3) return ratio;  // two workers are each as far from the other
  const double m = median_of(p);
  for (std::size_t w = 0, k = 0; w < W; ++w) {
    if (!(b[w] > 0)) continue;
    const double d2 = n[w] / (b[w] * b[w]) - 2 * m * p[k++] + m * m;
    z[w] = std::sqrt(b[w] * std::fmax(0.0, d2));
    held.push_back(z[w]);
  }
  const double typical = median_of(held);
  for (std::size_t w = 0; w < W; ++w) {
    if (!(b[w] > 0)) continue;
    // Workers that agree exactly leave no spread: any distance then stands out.
    ratio[w] = typical > 0 ? z[w] / typical : (z[w] > 0 ? HUGE_VAL : 0.0);
  }
  return ratio;
}

/// Adds term j of ||sums||^2, sums . u and ||u||^2 into acc[0 … 2], in
/// double, with u the direction the workers are projected on (an
/// ArraySumFunctor body).
template <class Sums, class Direction>
struct WorkerDots {
  Sums sums;
  Direction u;

  KOKKOS_FUNCTION void operator()(std::int64_t j, double* acc) const {
    const double s = double(sums(j)), v = double(u(j));
    acc[0] += s * s;
    acc[1] += s * v;
    acc[2] += v * v;
  }
};

/// WorkerStatistics that can also score this rank's workers against the
/// others' (StepResult::worker_ratios, StepResult::outliers) from three
/// numbers per worker that travel in the step's message, after its own
/// slots: slot(3w) = b_w, slot(3w + 1) = ||S_w||^2, slot(3w + 2) = S_w . u,
/// then ||u||^2 (rank 0's) and a flag (a rank summed more workers than it
/// has slots). u is the gradient of the step's previous evaluation, zero
/// before the first.
template <class Scalar, class MemorySpace>
class WatchedWorkers : public WorkerStatistics<Scalar> {
  using Base = WorkerStatistics<Scalar>;

 public:
  /// Watches `parts` workers on each of `ranks` ranks (0 stops).
  void watch(int parts, double threshold, int ranks, int rank) {
    check_watch_workers(parts, ranks, threshold);
    slots_ = parts;
    threshold_ = threshold;
    rank_ = rank;
    workers_ = parts * ranks;
    values_.assign(std::size_t(parts > 0 ? 3 * parts : 0), 0.0);
  }
  /// Workers per rank watched (0: not watching) and the threshold.
  int watched() const { return slots_; }
  double threshold() const { return threshold_; }
  /// The slots the watch adds to the step's message (0 when not watching).
  int message_slots() const { return slots_ > 0 ? 3 * workers_ + 2 : 0; }

  void clear() {
    Base::clear();
    local_ = 0;
    u2_ = 0;
    std::fill(values_.begin(), values_.end(), 0.0);
  }
  /// Base::add and, watching, the worker's three numbers, in one pass over
  /// its P sums and the direction `u` (P values).
  template <class Space, class Sums, class Direction>
  void add(const Space& space, const Sums& sums, int P, std::int64_t b, const Direction& u) {
    if (slots_ == 0 || local_ >= slots_ || b <= 0) {
      Base::add(space, sums, P, b);
      if (slots_ > 0 && local_ < slots_) values_[3 * std::size_t(local_)] = double(b);
      if (slots_ > 0) ++local_;  // counted past the slots: finish() refuses
      return;
    }
    double dots[3] = {0, 0, 0};
    Kokkos::parallel_reduce(
        "gradsum::step::watched_workers", Kokkos::RangePolicy<Space>(space, 0, P),
        ArraySumFunctor<double, WorkerDots<Sums, Direction>>{3, {sums, u}},
        Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(dots, 3));
    const std::size_t at = 3 * std::size_t(local_++);
    values_[at] = double(b);
    values_[at + 1] = dots[0];
    values_[at + 2] = dots[1];
    u2_ = dots[2];
    Base::add(space, sums, P, b, dots[0]);
  }
  /// Base::put, then this rank's share of the watch's slots after
  /// StepSlot::size (message_slots() values): its workers' numbers at their
  /// place, zero elsewhere, so that the step's sum of the message gives
  /// every rank every worker's.
  template <class Message>
  void put(const Message& message) const {
    Base::put(message);
    if (slots_ == 0) return;
    const int at = StepSlot::size;
    for (int s = 0; s < message_slots(); ++s) message.put(at + s, 0.0);
    for (std::size_t v = 0; v < values_.size(); ++v)
      message.put(at + 3 * rank_ * slots_ + int(v), values_[v]);
    // Rank 0's ||u||^2 alone, so that every rank scores the same numbers.
    if (rank_ == 0) message.put(at + 3 * workers_, u2_);
    message.put(at + 3 * workers_ + 1, local_ > slots_ ? 1 : 0);
  }

  /// Base::finish, then (watching) the outlier ratios from the aggregated
  /// message `tail` (StepSlot order, the watch's slots after StepSlot::size).
  template <class Space, class Sums, class Model, class Theta>
  void finish(const Space& space, const Sums& sums, const Model& model, const Theta& theta,
              double l2, double scale, const Scalar* tail, StepResult& result) const {
    Base::finish(space, sums, model, theta, l2, scale, tail, result);
    if (slots_ == 0) return;
    const Scalar* slot = tail + StepSlot::size;
    const int W = workers_;
    if (slot[3 * W + 1] > Scalar(0))
      fail("gradsum::Step::watch_workers: a rank summed more micro-batches (workers) than the ",
           slots_, " per rank being watched; call watch_workers with the number of "
           "micro-batches per update");
    std::vector<double> b(static_cast<std::size_t>(W), 0.0), n = b, c = b;
    for (int w = 0; w < W; ++w) {
      b[std::size_t(w)] = double(slot[3 * w]);
      n[std::size_t(w)] = double(slot[3 * w + 1]);
      c[std::size_t(w)] = double(slot[3 * w + 2]);
    }
    result.worker_ratios = outlier_ratios(b, n, c, double(slot[3 * W]));
    for (int w = 0; w < W; ++w)
      if (result.worker_ratios[std::size_t(w)] > threshold_) result.outliers.push_back(w);
  }

 private:
  int slots_ = 0, local_ = 0, rank_ = 0, workers_ = 0;
  double threshold_ = 3, u2_ = 0;
  std::vector<double> values_;  // b_w, ||S_w||^2, S_w . u of this rank's workers
};

}  // namespace detail
}  // namespace gradsum
