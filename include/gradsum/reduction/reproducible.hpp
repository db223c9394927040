// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/detail/binned_sum.hpp>
#include <gradsum/reduction/detail/cross_rank.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {

/// In-process reduction whose result is bit-for-bit the same for any
/// thread count, backend, order and partition of the samples, and - with
/// a distributed aggregation - any number of ranks: every contribution is
/// split exactly into 32-bit chunks, rounded to nearest, at absolute bin
/// boundaries, and the chunks are added exactly (see detail::binned_add
/// and the notes above it for the method, after Demmel & Nguyen's
/// ReproBLAS, its proof of reproducibility, and its error bound: at most
/// n 2^-64 max|x| per coordinate before one final rounding, at least as
/// accurate as plain double summation). Works for float and double data
/// (contributions are split in double). Inside the reduction, a sample's
/// contributions are deposited by a vectorized loop of floating-point
/// additions into bins that are moved into int64 bins now and then (for
/// bodies of rank-one blocks, Linear's batched path on host spaces, a
/// block of samples at a time with a few coordinates' bins in vector
/// registers; docs/performance.md gives its cost against Sum); the step
/// sums the int64 bins across ranks (one small extra collective
/// agrees on the bin windows), so the cross-rank sum is exact too.
///
/// What it sums are the contributions the model and loss compute, so the
/// same bits across builds also need the same contributions: the same
/// floating-point operations, which the -ffp-contract=off (and
/// --fmad=false under nvcc) of the CMake target gradsum::reproducible
/// (link it, not gradsum::gradsum) and the unfused per-sample arithmetic
/// (detail::multiply_add) give on every target, and the same math
/// functions (CUDA's exp and log may differ from the host's in the last
/// bit, which logistic and softmax losses see); docs/distributed.md says
/// which builds agree. Within one such build, thread counts, partitions,
/// backends and rank counts never change a bit.
///
/// Needs the Analytic gradient policy.
struct Reproducible {
  /// The step aggregates this reduction's integer bins, not its result.
  static constexpr bool binned = true;
  /// Its reduce() and reduce_bins() also take bodies of blocks in rank-one
  /// form (detail::RankOneBlock).
  static constexpr bool rank_one_blocks = true;
  static const char* name() { return "reproducible"; }

  /// Sums body(i, acc) over i in [0, n) into binned accumulators: the
  /// first width * binned_width int64 of `bins` (which holds at least
  /// detail::binned_work_size(width) int64, in a memory space the execution
  /// space can access; the rest is work space). Asynchronous.
  template <class Scalar, class ExecutionSpace, class Body, class BinsView>
  void reduce_bins(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                   int width, const Body& body, const BinsView& bins) const {
    detail::reduce_binned<Scalar>(space, label, n, width, body, bins,
                                  detail::max_flush_interval);
  }

  /// Like Sum::reduce: the reproducible sum of body(i, acc) rounded to
  /// Scalar into out(0 … width). Allocates a work buffer of
  /// detail::binned_work_size(width) int64 values per call (the step's own
  /// paths reuse their buffers instead: reduce_bins and
  /// detail::round_binned). Blocking.
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView& out) const {
    using Scalar = typename OutView::non_const_value_type;
    using Memory = typename OutView::memory_space;
    Kokkos::View<std::int64_t*, Memory> bins(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::reduction::reproducible::bins"),
        detail::binned_work_size(std::size_t(width)));
    reduce_bins<Scalar>(space, label, n, width, body, bins);
    detail::round_binned(space, bins, width, out);
    space.fence();
  }
};

}  // namespace gradsum
