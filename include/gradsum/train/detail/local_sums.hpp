// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A step's own rows summed, before any aggregation: at once, or in parts
/// (MicroBatches, or the parts of Step::measure_workers), each part one
/// worker that the worker statistics and watch measure on the way.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/train/detail/worker_watch.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// total(j) += part(j) for j < total.extent(0). Asynchronous.
template <class Space, class Total, class Part>
void add_into(const Space& space, const Total& total, const Part& part) {
  Kokkos::parallel_for(
      "gradsum::step::accumulate", Kokkos::RangePolicy<Space>(space, 0, int(total.extent(0))),
      KOKKOS_LAMBDA(int j) { total(j) += part(j); });
}

/// This worker's part of a step's sum, as the reduction's workers ask for
/// it (train/detail/reduction_workers.hpp): whether its inputs were
/// accepted, its sample count, `sum(target)`, which sums its gradient and
/// loss into the message through `target` (a reduction) and returns
/// whether they are known to be finite, `put(message)`, which puts the
/// slots its statistics fill, and whether the gradient may leave while
/// `sum` runs (`early`: nothing reads this worker's own sums afterwards).
template <class Sum, class Put>
struct LocalPart {
  bool ok;
  std::int64_t count;
  Sum sum;
  Put put;
  bool early;
};
template <class Sum, class Put>
LocalPart<Sum, Put> local_part(bool ok, std::int64_t count, const Sum& sum, const Put& put,
                               bool early) {
  return {ok, count, sum, put, early};
}

/// The sums of a step's own rows and what it measures of them: the worker
/// watch (Step::measure_workers, Step::watch_workers) and the buffer that
/// adds up micro-batches, allocated once.
template <class Scalar, class Memory>
class LocalSums {
 public:
  /// The worker statistics and watch.
  WatchedWorkers<Scalar, Memory>& watch() { return watch_; }

  /// Whether sum() writes the final sums once, in one pass over `rows`
  /// (no parts added up, nothing measured): the gradient may then leave
  /// while that pass runs.
  template <class Rows>
  bool one_pass(const Rows& rows) const {
    if constexpr (is_micro_batches<Rows>::value)
      if (rows.parts.size() != 1) return false;
    return watch_.parts() == 0;
  }
  const WatchedWorkers<Scalar, Memory>& watch() const { return watch_; }

  /// The buffer for P gradient sums and the loss.
  void allocate(int P) {
    P_ = P;
    accumulated_ = Kokkos::View<Scalar*, Memory>("gradsum::step::accumulated", std::size_t(P) + 1);
  }

  /// Sums `rows` into sums(0 … P]: `sum_part(part)` sums one selection of
  /// rows there; the watch measures each part against the direction `u`.
  /// Returns whether the sums are known to be finite (one measured worker
  /// whose norm and loss are). Blocking where it measures.
  template <class Space, class Rows, class SumPart, class Sums, class Direction>
  bool sum(const Space& space, const Rows& rows, const SumPart& sum_part, const Sums& sums,
           const Direction& u) {
    watch_.clear();
    add(space, rows, sum_part, sums, u);
    return watch_.lone_worker_finite();
  }

 private:
  // For MicroBatches the parts one after the other, added up in
  // accumulated_; measured parts of the rows as micro-batches.
  template <class Space, class Rows, class SumPart, class Sums, class Direction>
  void add(const Space& space, const Rows& rows, const SumPart& sum_part, const Sums& sums,
           const Direction& u) {
    if constexpr (is_micro_batches<Rows>::value) {
      if (rows.parts.size() == 1) return add(space, rows.parts[0], sum_part, sums, u);
      Kokkos::deep_copy(space, accumulated_, Scalar(0));
      for (const auto& part : rows.parts) {
        sum_part(part);
        if (watch_.parts() > 0) watch_.add(space, sums, P_, part.size(), u);
        add_into(space, accumulated_, sums);
      }
      Kokkos::deep_copy(
          space, Kokkos::subview(sums, Kokkos::make_pair(0, int(accumulated_.extent(0)))),
          accumulated_);
    } else if (watch_.parts() > 1) {  // the rows in parts, each one worker
      MicroBatches<Rows> parts;
      for (int k = 0; k < watch_.parts(); ++k)
        parts.parts.push_back(partition(rows, watch_.parts(), k));
      add(space, parts, sum_part, sums, u);
    } else {
      sum_part(rows);
      if (watch_.parts() > 0) watch_.add(space, sums, P_, rows.size(), u);
    }
  }

  int P_ = 0;
  Kokkos::View<Scalar*, Memory> accumulated_;  // P sums and the loss
  WatchedWorkers<Scalar, Memory> watch_;
};

}  // namespace detail
}  // namespace gradsum
