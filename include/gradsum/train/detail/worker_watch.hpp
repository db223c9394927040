// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Outlier workers (Step::watch_workers): each worker's gradient is
/// compared with the others' through three numbers per worker, sent in one
/// small collective after the step's aggregation, never the gradients.
///
/// The score. With g_w = S_w / b_w a worker's mean gradient (S_w its summed
/// loss gradient over b_w samples) and u = S / ||S|| the direction of the
/// summed gradient, every worker's projection p_w = g_w . u is known, and
/// the centre c = median_w(p_w) u is a robust point of the workers' cloud:
/// one worker far away moves the median of the projections little. The
/// distance of g_w to c follows exactly from ||S_w||^2 and S_w . S,
///
///     ||g_w - c||^2 = ||g_w||^2 - 2 m p_w + m^2,     m = median(p),
///
/// and z_w = sqrt(b_w) ||g_w - c|| puts workers of any size on the scale
/// of one sample's noise (sampling noise shrinks like 1/sqrt(b_w)). The
/// score is ratio_w = z_w / median_v(z_v); a worker is named when its ratio
/// exceeds the threshold (3 by default). For workers that differ only by
/// sampling noise, z_w is about sqrt(tr Sigma) for every worker, so their
/// ratios stay near 1 unless the gradient has very few dimensions (with
/// one or two, chance alone passes 3 in a few percent of the steps). Near
/// a point where the workers' gradients cancel (S close to 0), one outlier
/// among W workers scores about W - 1: with four workers the ratio then
/// falls to about 3, and the earlier steps are the ones that name it.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/train/detail/step_sums.hpp>
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
/// summed-gradient norms `n` (||S_w||^2), dots `c` (S_w . S) and ||S||^2
/// (the score above). Workers without samples get NaN. Host only.
inline std::vector<double> outlier_ratios(const std::vector<double>& b,
                                          const std::vector<double>& n,
                                          const std::vector<double>& c, double sum2) {
  const std::size_t W = b.size();
  std::vector<double> ratio(W, std::nan("")), p, z(W, 0.0), held;
  const double norm = std::sqrt(sum2);
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

/// The checks of Step::watch_workers: `parts_per_rank` in [0, 2^20] (done
/// by measure_workers), at least three workers in all, and a threshold
/// above 1. The same on every rank for the same arguments.
inline void check_watch_workers(int parts_per_rank, int ranks, double threshold) {
  if (parts_per_rank > 0 && std::int64_t(parts_per_rank) * ranks < 3)
    fail("gradsum::Step::watch_workers: naming an outlier needs at least 3 workers "
         "(parts_per_rank x ranks), got ", parts_per_rank, " x ", ranks, " = ",
         std::int64_t(parts_per_rank) * ranks,
         "; with two, each is as far from the other and neither can be named");
  if (!(threshold > 1) || !std::isfinite(threshold))
    fail("gradsum::Step::watch_workers: threshold must be finite and above 1 (a ratio "
         "to the typical worker's distance), got ", threshold);
}

/// In one pass over j < P: kept(k, .) . sums and ||sums||^2, in double.
template <class Kept, class Sums>
struct WorkerDots {
  using value_type = double[];
  using size_type = int;
  int value_count;  // 2
  Kept kept;
  Sums sums;
  int k;

  KOKKOS_FUNCTION void operator()(int j, double* acc) const {
    const double s = double(sums(j));
    acc[0] += double(kept(k, j)) * s;
    acc[1] += s * s;
  }
  KOKKOS_FUNCTION void init(double* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(double* dst, const double* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};

/// kept(k, j) = sums(j) for j < P, returning the sum of their squares: the
/// copy and the worker's norm in one pass.
template <class Kept, class Sums>
struct KeepWorker {
  Kept kept;
  Sums sums;
  int k;

  KOKKOS_FUNCTION void operator()(int j, double& acc) const {
    const auto s = sums(j);
    kept(k, j) = s;
    acc += double(s) * double(s);
  }
};

/// WorkerStatistics that can also keep each of this rank's workers'
/// summed gradients and turn them into outlier ratios after aggregation
/// (StepResult::worker_ratios, StepResult::outliers).
template <class Scalar, class MemorySpace>
class WatchedWorkers : public WorkerStatistics<Scalar> {
  using Base = WorkerStatistics<Scalar>;

 public:
  /// Watches `parts` workers per rank (0 stops) and allocates the copies
  /// of their P sums and the collective's buffer.
  template <class Aggregation>
  void watch(int parts, double threshold, Aggregation& aggregation, int P) {
    check_watch_workers(parts, aggregation.size(), threshold);
    slots_ = parts;
    threshold_ = threshold;
    if (parts == 0) return;
    rank_ = aggregation.rank();
    sizes_.assign(std::size_t(parts), 0.0);
    norms_.assign(std::size_t(parts), 0.0);
    workers_ = parts * aggregation.size();
    kept_ = Kokkos::View<Scalar**, Kokkos::LayoutRight, MemorySpace>(
        "gradsum::step::watched_workers", std::size_t(parts), std::size_t(P));
    values_ = Kokkos::View<double*, Kokkos::HostSpace>("gradsum::step::worker_distances",
                                                       std::size_t(3 * workers_ + 2));
    aggregation.template allocate<double, MemorySpace>(values_.extent(0));
  }
  /// Workers per rank watched (0: not watching) and the threshold.
  int watched() const { return slots_; }
  double threshold() const { return threshold_; }

  void clear() {
    Base::clear();
    local_ = 0;
  }
  /// Base::add, and a copy of the worker's P sums when watching.
  template <class Space, class Sums>
  void add(const Space& space, const Sums& sums, int P, std::int64_t b) {
    if (slots_ == 0 || local_ >= slots_ || b <= 0) {
      Base::add(space, sums, P, b);
      if (slots_ > 0 && local_ < slots_) sizes_[std::size_t(local_)] = double(b);
      if (slots_ > 0) ++local_;  // counted past the slots: score() refuses
      return;
    }
    const std::size_t k = std::size_t(local_++);
    sizes_[k] = double(b);
    Kokkos::parallel_reduce("gradsum::step::watched_workers",
                            Kokkos::RangePolicy<Space>(space, 0, P),
                            KeepWorker<decltype(kept_), Sums>{kept_, sums, int(k)}, norms_[k]);
    Base::add(space, sums, P, b, norms_[k]);
  }

  /// Base::finish, then (watching) the outlier ratios from one collective
  /// of 3 values per worker. Blocking; collective.
  template <class Space, class Aggregation, class Sums, class Model, class Theta>
  void finish(const Space& space, Aggregation& aggregation, const Sums& sums, const Model& model,
              const Theta& theta, double l2, const Scalar* tail, StepResult& result) {
    Base::finish(space, sums, model, theta, l2, tail, result);
    if (slots_ > 0) score(space, aggregation, sums, model.num_parameters(), result);
  }

 private:
  template <class Space, class Aggregation, class Sums>
  void score(const Space& space, Aggregation& aggregation, const Sums& sums, int P,
             StepResult& result) {
    const int W = workers_;
    Kokkos::deep_copy(values_, 0.0);
    double dots[2] = {0, 0};
    bool summed = false;  // ||S||^2, which rank 0 sends
    for (int k = 0; k < std::min(local_, slots_); ++k) {
      if (!(sizes_[std::size_t(k)] > 0)) continue;
      Kokkos::parallel_reduce("gradsum::step::worker_distances",
                              Kokkos::RangePolicy<Space>(space, 0, P),
                              WorkerDots<decltype(kept_), Sums>{2, kept_, sums, k},
                              Kokkos::View<double*, Kokkos::HostSpace,
                                           Kokkos::MemoryTraits<Kokkos::Unmanaged>>(dots, 2));
      const std::size_t at = 3 * std::size_t(rank_ * slots_ + k);
      values_(at) = sizes_[std::size_t(k)];
      values_(at + 1) = norms_[std::size_t(k)];
      values_(at + 2) = dots[0];
      summed = true;
    }
    // Rank 0's ||S||^2 alone, so that every rank scores the same numbers.
    if (rank_ == 0)
      values_(3 * W) =
          summed ? dots[1] : sum_of_squares(space, "gradsum::step::worker_distances", sums, P);
    values_(3 * W + 1) = local_ > slots_ ? 1 : 0;
    aggregation.aggregate(space, values_);
    if (values_(3 * W + 1) > 0)
      fail("gradsum::Step::watch_workers: a rank summed more micro-batches (workers) than the ",
           slots_, " per rank being watched; call watch_workers with the number of "
           "micro-batches per update");
    std::vector<double> b(static_cast<std::size_t>(W), 0.0), n = b, c = b;
    for (int w = 0; w < W; ++w) {
      b[std::size_t(w)] = values_(3 * std::size_t(w));
      n[std::size_t(w)] = values_(3 * std::size_t(w) + 1);
      c[std::size_t(w)] = values_(3 * std::size_t(w) + 2);
    }
    result.worker_ratios = outlier_ratios(b, n, c, values_(3 * W));
    for (int w = 0; w < W; ++w)
      if (result.worker_ratios[std::size_t(w)] > threshold_) result.outliers.push_back(w);
  }

  int slots_ = 0, local_ = 0, rank_ = 0, workers_ = 0;
  double threshold_ = 3;
  std::vector<double> sizes_, norms_;  // this rank's workers' sample counts, ||S_w||^2
  Kokkos::View<Scalar**, Kokkos::LayoutRight, MemorySpace> kept_;
  Kokkos::View<double*, Kokkos::HostSpace> values_;
};

}  // namespace detail
}  // namespace gradsum
