// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a step's reduction sums over workers, decided by the reduction's
/// workers, which the step calls once per evaluation without knowing how:
/// each worker's floating-point sums and slots added by the aggregation in
/// one message (PlainWorkers; a binned reduction that does not bin now),
/// or each worker's integer bins summed exactly and rounded once
/// (BinnedWorkers, reduction/detail/cross_rank.hpp's protocol).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/reduction/detail/binned.hpp>
#include <gradsum/reduction/detail/binned_sum.hpp>
#include <gradsum/reduction/detail/cross_rank.hpp>
#include <gradsum/train/detail/nonfinite.hpp>
#include <gradsum/train/detail/ordered_norms.hpp>
#include <gradsum/train/detail/step_message.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

/// This worker's statistics (local.put) and the step's slots into
/// `message`; a worker that failed sends zeros. Asynchronous.
template <class Space, class Local, class Message>
void put_slots(const Space& space, const Local& local, const Message& message, bool nonfinite) {
  using Scalar = typename Message::sums_view::non_const_value_type;
  if (local.ok) {
    local.put(message);
  } else {
    Kokkos::deep_copy(space, message.sums(), Scalar(0));
    message.clear_slots();
  }
  message.put(StepSlot::count, local.ok ? double(local.count) : 0.0);
  message.put(StepSlot::failed, local.ok ? 0.0 : 1.0);
  message.put(StepSlot::nonfinite, nonfinite ? 1.0 : 0.0);
  message.write_slots(space);
}

/// Whether `A` may sum a step's message in buckets during the backward
/// pass (Allreduce::overlap): it offers it, and the host reads `View`.
template <class A, class View, class = void>
struct has_overlap : std::false_type {};
template <class A, class View>
struct has_overlap<A, View, std::void_t<decltype(std::declval<A&>().template overlaps<View>())>>
    : std::bool_constant<Kokkos::SpaceAccessibility<
          Kokkos::HostSpace, typename View::memory_space>::accessible> {};

/// The plain protocol (sum_plainly) with the gradient's buckets sent while the backward pass
/// runs (Allreduce::overlap): the same buckets, started in the same order,
/// on every rank, early where this worker's backward pass reports them
/// final (local.early), all of them afterwards on a worker that failed.
template <class Space, class Reduction, class Aggregation, class Local, class Message>
bool sum_overlapped(const Space& space, const Reduction& reduction, Aggregation& aggregation,
                    const Local& local, const Message& message) {
  const int P = message.num_parameters();
  bool nonfinite = false;
  auto session = aggregation.overlap(space, message.sums(), std::size_t(P), local.ok && local.early);
  {
    ScopedRegion region("gradsum::step::gradient");
    if (local.ok) {
      const bool finite = local.sum(reduction);
      nonfinite = session.local_nonfinite() && !finite;
    }
    put_slots(space, local, message, nonfinite);
  }
  ScopedRegion region("gradsum::step::aggregate");
  session.finish();
  return nonfinite;
}

/// The plain protocol: this worker's sums (`local`, a LocalPart, through
/// `reduction`; zeros and a failed worker when its inputs were rejected)
/// and its slots into `message`, then every worker's message added, the
/// gradient's P sums combined by `aggregation` its own way. Returns whether
/// this worker's own sums are not finite. Collective.
template <class Space, class Reduction, class Aggregation, class Local, class Message>
bool sum_plainly(const Space& space, const Reduction& reduction, Aggregation& aggregation,
                 const Local& local, const Message& message) {
  if constexpr (has_overlap<Aggregation, typename Message::sums_view>::value)
    if (aggregation.template overlaps<typename Message::sums_view>())
      return sum_overlapped(space, reduction, aggregation, local, message);
  const int P = message.num_parameters();
  bool nonfinite = false;
  {
    ScopedRegion region("gradsum::step::gradient");
    if (local.ok) nonfinite = !local.sum(reduction) && any_nonfinite(space, message.sums(), P + 1);
    put_slots(space, local, message, nonfinite);
  }
  ScopedRegion region("gradsum::step::aggregate");
  aggregate_leading(aggregation, space, message.sums(), P, P + int(StepSlot::count));
  return nonfinite;
}

/// The finalizing pass's two sums of body(j, acc) over the blocks [first,
/// last) of `parts` (ordered_norms.hpp), the other blocks' parts brought by
/// gather(parts) (nothing to bring unless the step reduce-scattered), in
/// their fixed order into the host array `out`. Blocking.
template <class Space, class Body, class Parts, class Gather, class HostOut>
void ordered_two(const Space& space, const std::string& label, const Body& body,
                 const Parts& parts, int first, int last, const Gather& gather,
                 const HostOut& out) {
  parts.sum_blocks(space, label, first, last, body);
  gather(parts);
  parts.totals(out);
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
  /// `aggregation` (which allocates its own message buffer here). Bins
  /// while `reduction` bins; across workers only where they are summed
  /// (no robust `gradient` or `aggregation`, which need each worker's
  /// rounded sum). Without bins, only those of reduce_two: about 200 bytes
  /// a coordinate are not spent for nothing.
  template <class Reduction, class Gradient, class Aggregation>
  BinnedWorkers(const Reduction& reduction, const Gradient& gradient, Aggregation& aggregation,
                int width)
      : bins_(bins_in_use(reduction)),
        across_(bins_ && !combines_robustly(gradient) && !combines_robustly(aggregation)),
        width_(width),
        work_("gradsum::reduction::reproducible::bins",
              binned_work_size(std::size_t(bins_ ? width : 2))),
        message_("gradsum::reduction::reproducible::message",
                 across_ ? std::size_t(width) * binned_width + 3 : 0),
        windows_("gradsum::reduction::reproducible::windows", across_ ? std::size_t(width) : 0),
        host_(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                 "gradsum::reduction::reproducible::host_bins"),
              binned_work_size(2)) {
    if (across_) aggregation.template allocate<std::int64_t, Memory>(message_.extent(0));
  }

  /// Whether each worker's sums are rounded on their own before they are
  /// added (else integer bins are added exactly: no micro-batches, no
  /// worker statistics).
  bool rounds_each_worker() const { return !across_; }

  /// Room for in-process reductions of up to `width` coordinates (a
  /// Hessian's P^2) while the reduction bins. Allocates; call it before
  /// the work that needs it.
  void reserve(std::size_t width) {
    if (bins_ && binned_work_size(width) > work_.extent(0))
      work_ = bins_view("gradsum::reduction::reproducible::bins", binned_work_size(width));
  }

  /// Sums the contributions of every worker into `message`: across
  /// workers in bins, `local.sum(target)` runs this worker's gradient sum
  /// with `target` as its reduction (when `local.ok`; a worker that failed
  /// contributes nothing), then the windows are agreed, and the bins, the
  /// count, the failed flag and the count of workers whose own sum is not
  /// finite are summed across workers in one message, and rounded once;
  /// else sum_plainly. Returns whether this worker's own sum was not
  /// finite. Collective.
  template <class Space, class Reduction, class Aggregation, class Local, class Message>
  bool sum(const Space& space, const Reduction& reduction, Aggregation& aggregation,
           const Local& local, const Message& message) const {
    if (!across_) return sum_plainly(space, reduction, aggregation, local, message);
    static_assert(has_aggregate_max<Aggregation>::value,
                  "gradsum::Step: the Reproducible reduction needs an Aggregation with "
                  "`aggregate_max(space, values)`");
    {
      ScopedRegion region("gradsum::step::gradient");
      if (local.ok)
        local.sum(BinsTarget<Reduction, Scalar, bins_view>{reduction, work_});
      else
        binned_clear(space, work_, width_);
    }
    ScopedRegion region("gradsum::step::aggregate");
    const int poisoned = binned_windows(space, work_, windows_, width_);
    aggregation.aggregate_max(space, windows_);
    binned_align(space, work_, windows_, message_, width_, local.ok ? local.count : 0,
                 local.ok ? 0 : 1, poisoned > 0 ? 1 : 0);
    aggregation.aggregate(space, message_);
    binned_round(space, windows_, message_, message.sums(), width_);
    return poisoned > 0;
  }

  /// reduction.reduce(…) into `out` without allocating: in the bins while
  /// the reduction bins (up to the width reserved). Asynchronous.
  template <class Space, class Reduction, class Body, class Out>
  void reduce(const Space& space, const Reduction& reduction, const std::string& label,
              std::int64_t n, int width, const Body& body, const Out& out) const {
    if (!bins_) {
      reduction.reduce(space, label, n, width, body, out);
      return;
    }
    reduction.template reduce_bins<Scalar>(space, label, n, width, body, work_);
    round_binned(space, work_, width, out);
  }

  /// Whether the workers' sums are rounded sums added as they are (the
  /// reduction does not bin now), which a sharded step may reduce-scatter.
  bool adds_rounded_sums() const { return !bins_; }

  /// The sums of body(j, acc) over j < n, two values, into the host array
  /// `out` (a step's norms): binned while the reduction bins (the same bits
  /// whatever the thread count; every block, first = 0 and last = all),
  /// else ordered_two.
  template <class Space, class Reduction, class Body, class Parts, class Gather, class HostOut>
  void reduce_two(const Space& space, const Reduction& reduction, const std::string& label,
                  int n, const Body& body, const Parts& parts, int first, int last,
                  const Gather& gather, const HostOut& out) const {
    if (!bins_) {
      ordered_two(space, label, body, parts, first, last, gather, out);
      return;
    }
    reduction.template reduce_bins<Scalar>(space, label, n, 2, body, work_);
    Kokkos::deep_copy(space, host_, Kokkos::subview(work_, Kokkos::make_pair(std::size_t(0),
                                                                             host_.extent(0))));
    space.fence();
    out(0) = typename HostOut::non_const_value_type(binned_value(host_.data()));
    out(1) = typename HostOut::non_const_value_type(binned_value(host_.data() + binned_width));
  }

 private:
  bool bins_ = false, across_ = false;
  int width_ = 0;
  bins_view work_, message_, windows_;
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> host_;
};

/// What a step keeps for a reduction whose sums the aggregation adds as
/// they are (Sum, Compensated): nothing; it sums plainly.
template <class Scalar, class Memory>
struct PlainWorkers {
  PlainWorkers() = default;
  template <class Reduction, class Gradient, class Aggregation>
  PlainWorkers(const Reduction&, const Gradient&, Aggregation&, int) {}
  bool rounds_each_worker() const { return true; }
  bool adds_rounded_sums() const { return true; }
  void reserve(std::size_t) {}
  template <class Space, class Reduction, class Aggregation, class Local, class Message>
  bool sum(const Space& space, const Reduction& reduction, Aggregation& aggregation,
           const Local& local, const Message& message) const {
    return sum_plainly(space, reduction, aggregation, local, message);
  }
  template <class Space, class Reduction, class Body, class Out>
  void reduce(const Space& space, const Reduction& reduction, const std::string& label,
              std::int64_t n, int width, const Body& body, const Out& out) const {
    reduction.reduce(space, label, n, width, body, out);
  }
  /// ordered_two (see BinnedWorkers::reduce_two).
  template <class Space, class Reduction, class Body, class Parts, class Gather, class HostOut>
  void reduce_two(const Space& space, const Reduction&, const std::string& label, int,
                  const Body& body, const Parts& parts, int first, int last, const Gather& gather,
                  const HostOut& out) const {
    ordered_two(space, label, body, parts, first, last, gather, out);
  }
};

/// What a step keeps for `Reduction` to sum over workers.
template <class Reduction, class Scalar, class Memory>
using ReductionWorkers = std::conditional_t<is_binned_reduction<Reduction>::value,
                                            BinnedWorkers<Scalar, Memory>,
                                            PlainWorkers<Scalar, Memory>>;

}  // namespace detail
}  // namespace gradsum
