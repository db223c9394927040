// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Robust combination rules for the gradients of W workers (MPI ranks, or
/// parts of a batch inside one process), and the kernel that applies them.
///
/// Scale: every rule returns a *sum-scale* aggregate, one that equals the
/// plain sum of the W worker gradients when all workers hold the same
/// gradient g (the median of W copies of g, times W, is W g). A mean
/// objective therefore still divides the aggregate once by the global
/// sample count, exactly as it divides the plain sum, and learning rates
/// need no change when a robust rule replaces the sum.
///
/// Only the gradient coordinates are combined robustly; the values that
/// follow them in the step's buffer (loss sum, sample count, failure and
/// non-finite flags) are always summed, in worker order.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>
#include <string>

namespace gradsum {

/// Coordinate-wise median of the worker gradients, times the number of
/// workers W (for even W, the mean of the two middle values). Tolerates up
/// to ceil(W/2) - 1 arbitrarily corrupted workers per coordinate, which is
/// none for W <= 2 (the median of two values is their mean): it needs at
/// least 3 workers, and is refused below that (RobustRule::check). With
/// fewer ranks, split each rank's batch into virtual workers
/// (gradient/virtual_workers.hpp).
struct CoordinateMedian {};

/// Per coordinate, drops the k largest and the k smallest worker values
/// and averages the remaining W - 2k, times W. Needs 0 <= 2k < W;
/// tolerates k corrupted workers. k = 0 is the plain sum (up to rounding).
struct TrimmedMean {
  /// Values dropped at each end, per coordinate.
  int k = 1;
};

/// Scales each worker's gradient down to Euclidean norm b when it is
/// longer, then sums: one worker can move the aggregate by at most b. The
/// result equals the plain sum while no worker's norm exceeds its b.
///
/// By default b = c, in units of one worker's *summed* gradient (the same
/// units as the plain sum), so the right c grows with the samples a worker
/// holds. With `per_sample`, b = c n_w for a worker holding n_w samples of
/// this step: c is then a norm per sample, and one c serves every shard
/// and batch size (a worker with no samples keeps its zero gradient).
///
/// Choosing c, from a clean run: a clean worker's summed gradient over n_w
/// samples has a norm per sample of about sqrt(||G||^2 + tr(Sigma) / n_w)
/// (G the mean gradient, tr(Sigma) the per-sample gradient noise), both of
/// which Step::measure_workers estimates (StepResult::gradient_norm2_estimate
/// and noise_trace). Take its largest value over the run times a margin of
/// 2 to 3 (times n_w without per_sample), so that clean workers are seldom
/// clipped while a corrupted one moves the aggregate by at most b. Needs
/// c > 0 and finite.
struct NormClip {
  /// Largest norm a worker's gradient keeps (per sample with per_sample).
  double c = 1;
  /// Whether the bound is c times the worker's sample count.
  bool per_sample = false;
};

/// One of the combination rules (or the plain sum), chosen at run time so
/// that one compiled step serves every rule. Converts implicitly from
/// CoordinateMedian, TrimmedMean and NormClip.
struct RobustRule {
  /// Which rule.
  enum class Kind { sum, median, trimmed_mean, norm_clip };
  Kind kind = Kind::sum;
  /// TrimmedMean's k.
  int k = 0;
  /// NormClip's c.
  double c = 0;
  /// NormClip's per_sample: the bound is c times each worker's sample
  /// count, which the aggregation reads from the worker's buffer.
  bool per_sample = false;

  /// The plain sum.
  RobustRule() = default;
  RobustRule(CoordinateMedian) : kind(Kind::median) {}
  RobustRule(TrimmedMean t) : kind(Kind::trimmed_mean), k(t.k) {}
  RobustRule(NormClip n) : kind(Kind::norm_clip), c(n.c), per_sample(n.per_sample) {}

  /// Whether the rule needs each worker's sample count (per-sample NormClip).
  bool needs_counts() const { return kind == Kind::norm_clip && per_sample; }

  /// Whether the rule is the plain sum.
  bool is_sum() const { return kind == Kind::sum; }

  /// Whether each worker's gradient is a vote (a median, a trimmed mean),
  /// so that a worker without rows, whose gradient is zero, would count.
  bool counts_votes() const { return kind == Kind::median || kind == Kind::trimmed_mean; }
  /// Whether, for `workers` workers, the rule differs from the plain sum:
  /// any rule but the sum for W > 1; for one worker only NormClip (the
  /// median or trimmed mean of one vector is that vector).
  bool changes(int workers) const {
    return kind == Kind::norm_clip || (kind != Kind::sum && workers > 1);
  }

  /// "sum", "median", "trimmed:K" or "clip:C", as on gradsum-train's
  /// command line ("clip:C per sample" with per_sample).
  std::string name() const {
    switch (kind) {
      case Kind::median: return "median";
      case Kind::trimmed_mean: return detail::concat("trimmed:", k);
      case Kind::norm_clip: return detail::concat("clip:", c, per_sample ? " per sample" : "");
      default: return "sum";
    }
  }

  /// What is wrong with the rule for `workers` workers, or "" when it can
  /// be applied: CoordinateMedian needs W >= 3, TrimmedMean 0 <= 2k < W,
  /// NormClip c > 0 and finite, every rule at least one worker.
  std::string check(int workers) const {
    if (workers < 1)
      return detail::concat("gradsum::RobustRule: the number of workers must be at least 1, got ",
                            workers);
    if (kind == Kind::median && workers <= 2)
      return detail::concat(
          "gradsum::CoordinateMedian: needs at least 3 workers, got W = ", workers,
          workers == 2 ? " (the median of two workers is their mean" : " (the median of one "
          "worker is its own gradient", ", so it tolerates no corrupted worker); use 3 or more "
          "workers (MPI ranks, or VirtualWorkers parts of each batch in one process: "
          "gradient/virtual_workers.hpp), or NormClip, which bounds every worker at any W");
    if (kind == Kind::trimmed_mean && (k < 0 || 2 * std::int64_t(k) >= workers))
      return detail::concat("gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = ", workers,
                            " (the number of workers), got k = ", k);
    if (kind == Kind::norm_clip && !(c > 0 && c <= 1.7976931348623157e308))
      return detail::concat("gradsum::NormClip: c must be positive and finite, got ", c);
    return {};
  }
  /// Throws gradsum::Error with check()'s message when it is not empty.
  void validate(int workers) const {
    const std::string error = check(workers);
    if (!error.empty()) throw Error(error);
  }
};

namespace detail {

/// Sorts v[0], v[stride], … v[(W-1) stride] ascending in place (insertion
/// sort: W is a worker count, small; the order of equal values does not
/// matter to the result).
template <class Scalar>
KOKKOS_INLINE_FUNCTION void sort_strided(Scalar* v, std::int64_t stride, int W) {
  for (int a = 1; a < W; ++a) {
    const Scalar x = v[a * stride];
    int b = a - 1;
    while (b >= 0 && x < v[b * stride]) {
      v[(b + 1) * stride] = v[b * stride];
      --b;
    }
    v[(b + 1) * stride] = x;
  }
}

/// One coordinate of the robust aggregate of the W values v[w stride];
/// may reorder them. `factors` holds NormClip's per-worker scales. A
/// non-finite value among them makes the result non-finite, so the step's
/// non-finite guard sees a corrupted worker whatever the rule.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar robust_coordinate(RobustRule::Kind kind, int k, Scalar* v,
                                                std::int64_t stride, int W,
                                                const Scalar* factors) {
  bool finite = true;
  for (int w = 0; w < W; ++w) finite = finite && math::isfinite(v[w * stride]);
  Scalar s = 0;
  if (!finite) kind = RobustRule::Kind::sum;  // a sum with a NaN or infinity is not finite
  switch (kind) {
    case RobustRule::Kind::norm_clip:
      for (int w = 0; w < W; ++w) s += factors[w] * v[w * stride];
      return s;
    case RobustRule::Kind::median:
      sort_strided(v, stride, W);
      s = W % 2 ? v[(W / 2) * stride] : (v[(W / 2 - 1) * stride] + v[(W / 2) * stride]) / Scalar(2);
      return s * Scalar(W);
    case RobustRule::Kind::trimmed_mean:
      sort_strided(v, stride, W);
      for (int w = k; w < W - k; ++w) s += v[w * stride];
      return s / Scalar(W - 2 * k) * Scalar(W);
    default:
      for (int w = 0; w < W; ++w) s += v[w * stride];
      return s;
  }
}

/// The robust aggregate of W worker vectors of length `length`, stored
/// worker after worker in `values` (W * length entries; reordered), into
/// out(0 … length): coordinates [0, robust) by `rule`, the rest summed in
/// worker order. `factors` is room for W scalars (NormClip's scales,
/// computed from the norms of the [0, robust) parts); for a per-sample
/// NormClip it holds each worker's sample count on entry. Every coordinate
/// is computed by one thread in a fixed order, so the result is the same
/// bits for any thread count. Asynchronous.
template <class ExecutionSpace, class Values, class Factors, class Out>
void robust_combine(const ExecutionSpace& space, const RobustRule& rule, int W,
                    std::int64_t robust, std::int64_t length, const Values& values,
                    const Factors& factors, const Out& out) {
  using Scalar = typename Values::non_const_value_type;
  const auto kind = rule.kind;
  const int k = rule.k;
  if (kind == RobustRule::Kind::norm_clip) {
    const double c = rule.c;
    const bool per_sample = rule.per_sample;
    Kokkos::parallel_for(
        "gradsum::aggregation::robust::norms", Kokkos::RangePolicy<ExecutionSpace>(space, 0, W),
        KOKKOS_LAMBDA(int w) {
          double squares = 0;
          for (std::int64_t j = 0; j < robust; ++j) {
            const double x = double(values(w * length + j));
            squares += x * x;
          }
          const double norm = math::sqrt(squares);
          const double bound = per_sample ? c * double(factors(w)) : c;
          factors(w) = Scalar(norm > bound ? bound / norm : 1.0);
        });
  }
  Kokkos::parallel_for(
      "gradsum::aggregation::robust::combine",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, length),
      KOKKOS_LAMBDA(std::int64_t j) {
        out(j) = robust_coordinate(j < robust ? kind : RobustRule::Kind::sum, k, &values(j),
                                   length, W, factors.data());
      });
}

}  // namespace detail
}  // namespace gradsum
