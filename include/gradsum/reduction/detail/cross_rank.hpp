// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The binned reduction across workers: each worker's integer bins, their
/// windows agreed (one small max-collective), the bins summed as integers
/// in one message with three tail values, then rounded once. Its kernels
/// and the target that routes a gradient policy's sums into the bins; the
/// step's BinnedWorkers (train/detail/reduction_workers.hpp) run it.

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

}  // namespace detail
}  // namespace gradsum
