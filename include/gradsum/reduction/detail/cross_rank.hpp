// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The binned reduction across workers: each worker's integer bins, their
/// windows agreed (one small max-collective), the bins summed as integers
/// in one message with three tail values, then rounded once. A step holds
/// a ReductionWorkers (the type its reduction calls for) and calls it
/// without knowing whether bins are involved.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/reduction/detail/binned.hpp>
#include <gradsum/reduction/detail/binned_sum.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

/// Routes a gradient policy's reduce() call to a binned reduction's
/// reduce_bins() into the step's bin buffer.
template <class Reduction, class Scalar, class Bins>
struct BinsTarget {
  static constexpr bool binned = true;  // each sample's contribution on its own
  static constexpr bool rank_one_blocks = takes_rank_one_blocks<Reduction>::value;
  const Reduction& reduction;
  Bins bins;
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView&) const {
    reduction.template reduce_bins<Scalar>(space, label, n, width, body, bins);
  }
};

// The protocol's kernels, free functions of the space and the views only,
// so that every step of a space shares one instance of each.

/// Marks the `width` binned accumulators in `bins` empty. Asynchronous.
template <class ExecutionSpace, class Bins>
void binned_clear(const ExecutionSpace& space, const Bins& bins, int width) {
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::reduction::reproducible::empty", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        bins(w * j) = empty_window;
        for (int k = 1; k < w; ++k) bins(w * j + k) = 0;
      });
}

/// Copies the window of each of the `width` accumulators in `work` into
/// `windows`; returns how many are poisoned (NaN or infinity). Blocking.
template <class ExecutionSpace, class Bins>
int binned_windows(const ExecutionSpace& space, const Bins& work, const Bins& windows, int width) {
  constexpr int w = binned_width;
  int poisoned = 0;
  Kokkos::parallel_reduce(
      "gradsum::reduction::reproducible::windows", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j, int& bad) {
        windows(j) = work(w * j);
        bad += windows(j) == poisoned_window ? 1 : 0;
      },
      poisoned);
  return poisoned;
}

/// Moves each accumulator of `work` to the agreed window `windows(j)` and
/// writes its bins, then the three tail values, into `message`.
/// Asynchronous.
template <class ExecutionSpace, class Bins>
void binned_align(const ExecutionSpace& space, const Bins& work, const Bins& windows,
                  const Bins& message, int width, std::int64_t tail0, std::int64_t tail1,
                  std::int64_t tail2) {
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::reduction::reproducible::align", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        std::int64_t acc[w];
        for (int k = 0; k < w; ++k) acc[k] = work(w * j + k);
        const std::int64_t t = windows(j);
        if (t == poisoned_window || t == empty_window) {
          for (int k = 1; k < w; ++k) acc[k] = 0;
        } else if (acc[0] == empty_window || acc[0] == poisoned_window) {
          for (int k = 1; k < w; ++k) acc[k] = 0;  // a poisoned rank poisons t
        } else {
          raise_window(acc, t);
        }
        message(w * j) = 0;  // the window travels in `windows`
        for (int k = 1; k < w; ++k) message(w * j + k) = acc[k];
        if (j == 0) {
          message(w * width) = tail0;
          message(w * width + 1) = tail1;
          message(w * width + 2) = tail2;
        }
      });
}

/// Rounds the aggregated bins of `message` (windows in `windows`) once into
/// sums(0 … width), and the three tail values after them. Asynchronous.
template <class ExecutionSpace, class Bins, class Sums>
void binned_round(const ExecutionSpace& space, const Bins& windows, const Bins& message,
                  const Sums& sums, int width) {
  using Scalar = typename Sums::non_const_value_type;
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::reduction::reproducible::round_message", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        std::int64_t acc[w];
        acc[0] = windows(j);
        for (int k = 1; k < w; ++k) acc[k] = message(w * j + k);
        sums(j) = Scalar(binned_value(acc));
        if (j == 0) {
          sums(width) = Scalar(message(w * width));
          sums(width + 1) = Scalar(message(w * width + 1));
          sums(width + 2) = Scalar(message(w * width + 2));
        }
      });
}

/// What a step keeps for a binned reduction (Reproducible, and
/// RuntimeReduction while it bins): integer bins for the in-process sums,
/// the agreed windows and the message summed across workers. Allocated
/// once; nothing allocates afterwards.
template <class Scalar, class Memory>
class BinnedWorkers {
 public:
  using bins_view = Kokkos::View<std::int64_t*, Memory>;

  BinnedWorkers() = default;
  /// Buffers for `width` coordinates summed across the workers of
  /// `aggregation` (which allocates its own message buffer here). With
  /// `bins` false (a RuntimeReduction that does not bin), only the bins of
  /// reduce_two: about 200 bytes a coordinate are not spent for nothing.
  template <class Aggregation>
  BinnedWorkers(Aggregation& aggregation, int width, bool bins = true)
      : width_(width),
        work_("gradsum::reduction::reproducible::bins",
              binned_work_size(std::size_t(bins ? width : 2))),
        message_("gradsum::reduction::reproducible::message",
                 bins ? std::size_t(width) * binned_width + 3 : 0),
        windows_("gradsum::reduction::reproducible::windows", bins ? std::size_t(width) : 0),
        host_(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                 "gradsum::reduction::reproducible::host_bins"),
              binned_work_size(2)) {
    if (bins) aggregation.template allocate<std::int64_t, Memory>(message_.extent(0));
  }

  /// Room for in-process reductions of up to `width` coordinates (a
  /// Hessian's P^2). Allocates; call it before the work that needs it.
  void reserve(std::size_t width) {
    if (binned_work_size(width) > work_.extent(0))
      work_ = bins_view("gradsum::reduction::reproducible::bins", binned_work_size(width));
  }

  /// Whether sum() is to be used with `reduction` now.
  template <class Reduction>
  static bool sums_workers(const Reduction& reduction) {
    return bins_in_use(reduction);
  }

  /// Sums the contributions of every worker: `local(target)` runs this
  /// worker's gradient sum with `target` as its reduction (when `ok`; a
  /// worker that failed contributes nothing), then the windows are agreed,
  /// and the bins, the two `tail` values and the count of workers whose
  /// own sum is not finite are summed across workers in one message; the
  /// totals are rounded once into sums(0 … width), the three counts after
  /// them. Returns whether this worker's own sum was not finite.
  /// Collective.
  template <class Space, class Reduction, class Aggregation, class Local, class Sums>
  bool sum(const Space& space, const Reduction& reduction, Aggregation& aggregation,
           const Local& local, bool ok, const std::int64_t (&tail)[2], const Sums& sums) {
    static_assert(has_aggregate_max<Aggregation>::value,
                  "gradsum::Step: the Reproducible reduction needs an Aggregation with "
                  "`aggregate_max(space, values)`");
    {
      ScopedRegion region("gradsum::step::gradient");
      if (ok)
        local(BinsTarget<Reduction, Scalar, bins_view>{reduction, work_});
      else
        binned_clear(space, work_, width_);
    }
    ScopedRegion region("gradsum::step::aggregate");
    const int poisoned = binned_windows(space, work_, windows_, width_);
    aggregation.aggregate_max(space, windows_);
    binned_align(space, work_, windows_, message_, width_, tail[0], tail[1], poisoned > 0 ? 1 : 0);
    aggregation.aggregate(space, message_);
    binned_round(space, windows_, message_, sums, width_);
    return poisoned > 0;
  }

  /// reduction.reduce(…) into `out` without allocating: in the bins while
  /// the reduction bins (up to the width reserved). Asynchronous.
  template <class Space, class Reduction, class Body, class Out>
  void reduce(const Space& space, const Reduction& reduction, const std::string& label,
              std::int64_t n, int width, const Body& body, const Out& out) const {
    if (!bins_in_use(reduction)) {
      reduction.reduce(space, label, n, width, body, out);
      return;
    }
    reduction.template reduce_bins<Scalar>(space, label, n, width, body, work_);
    round_binned(space, work_, width, out);
  }

  /// The binned sums of body(j, acc) over j < n, two values, into the host
  /// array `out` (a step's norms: the same bits whatever the thread
  /// count). Blocking.
  template <class Space, class Reduction, class Body, class HostOut>
  void reduce_two(const Space& space, const Reduction& reduction, const std::string& label,
                  int n, const Body& body, const HostOut& out) const {
    reduction.template reduce_bins<Scalar>(space, label, n, 2, body, work_);
    Kokkos::deep_copy(space, host_, Kokkos::subview(work_, Kokkos::make_pair(std::size_t(0),
                                                                             host_.extent(0))));
    space.fence();
    out(0) = typename HostOut::non_const_value_type(binned_value(host_.data()));
    out(1) = typename HostOut::non_const_value_type(binned_value(host_.data() + binned_width));
  }

 private:
  int width_ = 0;
  bins_view work_, message_, windows_;
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> host_;
};

/// What a step keeps for a reduction whose sums the aggregation adds as
/// they are (Sum, Compensated): nothing.
template <class Scalar, class Memory>
struct PlainWorkers {
  PlainWorkers() = default;
  template <class Aggregation>
  PlainWorkers(Aggregation&, int) {}
  void reserve(std::size_t) {}
  template <class Reduction>
  static bool sums_workers(const Reduction&) {
    return false;
  }
  /// Never called: sums_workers() is false.
  template <class Space, class Reduction, class Aggregation, class Local, class Sums>
  bool sum(const Space&, const Reduction&, Aggregation&, const Local&, bool,
           const std::int64_t (&)[2], const Sums&) {
    return false;
  }
  template <class Space, class Reduction, class Body, class Out>
  void reduce(const Space& space, const Reduction& reduction, const std::string& label,
              std::int64_t n, int width, const Body& body, const Out& out) const {
    reduction.reduce(space, label, n, width, body, out);
  }
  template <class Space, class Reduction, class Body, class HostOut>
  void reduce_two(const Space& space, const Reduction&, const std::string& label, int n,
                  const Body& body, const HostOut& out) const {
    Kokkos::parallel_reduce(label, Kokkos::RangePolicy<Space>(space, 0, n), body, out);
  }
};

/// What a step keeps for `Reduction` to sum over workers.
template <class Reduction, class Scalar, class Memory>
using ReductionWorkers = std::conditional_t<is_binned_reduction<Reduction>::value,
                                            BinnedWorkers<Scalar, Memory>,
                                            PlainWorkers<Scalar, Memory>>;

}  // namespace detail
}  // namespace gradsum
