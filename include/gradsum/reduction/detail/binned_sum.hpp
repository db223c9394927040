// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The Kokkos array reduction behind Reproducible (BinnedSumFunctor),
/// reduce_binned, and rounding the accumulators once.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>
#include <gradsum/reduction/array_reduce.hpp>
#include <gradsum/reduction/detail/binned.hpp>
#include <gradsum/reduction/detail/binned_state.hpp>
#include <gradsum/reduction/detail/deposit.hpp>
#include <gradsum/reduction/detail/lanes.hpp>
#include <gradsum/reduction/detail/rank_one_block.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// The Kokkos array reduction behind Reproducible over `width`
/// coordinates (value_count = binned_work_size(width)): per sample, the
/// body's contributions, then deposit_sample, or, rarely, the careful path
/// per coordinate; or, for a body of rank-one blocks (is_rank_one_body),
/// per block, deposit_block where the build and processor have the vector
/// lanes, else each sample's contributions through deposit_sample. Joins
/// and the final step work in integer format; the final step leaves the
/// width integer accumulators at the front.
template <class Scalar, class Body>
struct BinnedSumFunctor {
  using value_type = std::int64_t[];
  using size_type = int;
  int value_count;
  int width;
  Body body;
  std::int64_t flush_interval = max_flush_interval;
  // Run the AVX2 copies: deposit_sample_avx2, and the lanes where they
  // need it (GRADSUM_SIMD_LANES_DISPATCH). Host backends only.
  bool avx2 = false;

  KOKKOS_FUNCTION void init(std::int64_t* acc) const {
    const BinnedState<std::int64_t*, Scalar> s{acc, width};
    for (int j = 0; j < width; ++j) {
      s.set_window(j, empty_window);
      for (int b = 0; b < bins_per_window; ++b) s.int_bin(b)[j] = 0;
    }
    *s.count() = 0;
    Scalar* contribution = reinterpret_cast<Scalar*>(s.scratch());
    for (int j = 0; j < width; ++j) contribution[j] = Scalar(0);
  }

  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t* acc) const {
    if constexpr (is_rank_one_body<Body>::value)
      rank_one_block(i, acc);
    else
      one_sample(i, acc);
  }

  /// Index i is one sample: the body adds its contributions to zeros.
  KOKKOS_FUNCTION void one_sample(std::int64_t i, std::int64_t* acc) const {
    const BinnedState<std::int64_t*, Scalar> s{acc, width};
    // The sample's contributions, gathered in the scratch part (whose
    // int64 slots are at least as large and aligned as a Scalar; zeros
    // from init or the previous sample).
    Scalar* contribution = reinterpret_cast<Scalar*>(s.scratch());
    body(i, contribution);
    deposit_contributions(s, contribution);
    if (++*s.count() >= flush_interval) s.flush();
  }

  /// Deposits one sample's contributions (the scratch part) and zeroes
  /// them: deposit_sample, or, rarely, the careful path per coordinate.
  KOKKOS_FUNCTION void deposit_contributions(const BinnedState<std::int64_t*, Scalar>& s,
                                             Scalar* contribution) const {
    bool done;
#ifdef GRADSUM_SIMD_AVX2_COPY
    if (avx2)
      done = deposit_sample_avx2(contribution, s.limit(), s.fp_bin(0), s.fp_bin(1), s.fp_bin(2),
                                 width);
    else
#endif
      done = deposit_sample(contribution, s.limit(), s.fp_bin(0), s.fp_bin(1), s.fp_bin(2), width);
    if (!done) {
      for (int j = 0; j < width; ++j) {
        s.add(j, contribution[j]);
        contribution[j] = Scalar(0);
      }
    }
  }

  /// Index i is a block of samples in rank-one form (width = d + 2),
  /// deposited in pieces that keep the count of samples between moves of
  /// the floating-point bins at most flush_interval.
  KOKKOS_FUNCTION void rank_one_block(std::int64_t i, std::int64_t* acc) const {
    const BinnedState<std::int64_t*, Scalar> s{acc, width};
    typename Body::block_type block;
    body(i, block);
    const int piece = flush_interval < block.capacity ? int(flush_interval) : block.capacity;
    for (int first = 0; first < block.m; first += piece) {
      const int count = block.m - first < piece ? block.m - first : piece;
      if (*s.count() + count > flush_interval) s.flush();
#ifdef GRADSUM_SIMD_LANES
      if (lanes_run())
        deposit_block(s, width - 2, block, first, count);
      else
#endif
        deposit_each_sample(s, block, first, count);
      *s.count() += count;
    }
  }

#ifdef GRADSUM_SIMD_LANES
  /// Whether deposit_block runs: always in builds for AVX2 or AVX-512; in
  /// builds with the AVX2 and FMA copy, where the processor has both.
  bool lanes_run() const {
#ifdef GRADSUM_SIMD_LANES_DISPATCH
    return avx2;
#else
    return true;
#endif
  }
#endif

  /// Samples first … first + count - 1 of a rank-one block, one at a time
  /// through the scratch part and deposit_contributions.
  template <class Block>
  KOKKOS_FUNCTION void deposit_each_sample(const BinnedState<std::int64_t*, Scalar>& s,
                                           const Block& block, int first, int count) const {
    Scalar* contribution = reinterpret_cast<Scalar*>(s.scratch());
    const int d = width - 2;
    for (int k = first; k < first + count; ++k) {
      for (int j = 0; j < d; ++j) contribution[j] = Scalar(block.scale[k] * block.row[k][j]);
      contribution[d] = block.scale[k];
      contribution[d + 1] = block.value[k];
      deposit_contributions(s, contribution);
    }
  }

  template <class Dst, class Src>
  KOKKOS_FUNCTION void join_states(Dst dst, Src src) const {
    const BinnedState<Dst, Scalar> d{dst, width};
    const BinnedState<Src, Scalar> s{src, width};
    for (int j = 0; j < width; ++j) {
      std::int64_t a[binned_width], b[binned_width];
      d.load(j, a);
      s.load(j, b);
      binned_merge(a, b);
      d.store(j, a);
    }
    *d.count() = 0;
  }
  KOKKOS_FUNCTION void join(std::int64_t* dst, const std::int64_t* src) const {
    join_states(dst, src);
  }
#if KOKKOS_VERSION < 40000
  // Kokkos 3.x recognises only a join with volatile arguments, and replaces
  // a join it does not recognise by an element-wise sum without a word.
  KOKKOS_FUNCTION void join(volatile std::int64_t* dst, const volatile std::int64_t* src) const {
    join_states(dst, src);
  }
#endif

  /// The integer-format accumulators {T, bin T, bin T-1, bin T-2} of the
  /// width coordinates at the front of the buffer.
  KOKKOS_FUNCTION void final(std::int64_t* acc) const {
    const BinnedState<std::int64_t*, Scalar> s{acc, width};
    s.flush();
    // The windows move to the last floating-point bins' region: every slot
    // read below lies at 4 width or beyond, every slot written below it.
    std::int64_t* windows = reinterpret_cast<std::int64_t*>(s.fp_bin(2));
    for (int j = 0; j < width; ++j) windows[j] = s.top()[j];
    for (int j = 0; j < width; ++j) {
      const std::int64_t t = windows[j];
      const std::int64_t b0 = s.int_bin(0)[j], b1 = s.int_bin(1)[j], b2 = s.int_bin(2)[j];
      acc[binned_width * j] = t;
      acc[binned_width * j + 1] = b0;
      acc[binned_width * j + 2] = b1;
      acc[binned_width * j + 3] = b2;
    }
  }
};

/// Reproducible::reduce_bins with the floating-point bins moved into the
/// int64 bins every `flush_interval` samples (1 to max_flush_interval;
/// tests use small ones: the result must not change) and the AVX2 copy of
/// the deposit where it runs (`allow_avx2`; tests compare both).
/// Asynchronous.
template <class Scalar, class ExecutionSpace, class Body, class BinsView>
void reduce_binned(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                   int width, const Body& body, const BinsView& bins,
                   std::int64_t flush_interval, bool allow_avx2 = true) {
  if (flush_interval < 1 || flush_interval > max_flush_interval)
    fail("gradsum::detail::reduce_binned: flush_interval is ", flush_interval, "; expected 1 to ",
         max_flush_interval);
  const std::size_t size = binned_work_size(std::size_t(width));
  if (bins.extent(0) < size)
    fail("gradsum::Reproducible::reduce_bins: the bins buffer holds ", bins.extent(0),
         " int64 values; expected at least ", size, " for width ", width);
  Kokkos::View<std::int64_t*, typename BinsView::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      result(bins.data(), size);
  // The AVX2 copy only where the kernel runs on this host's processor.
  const bool avx2 = allow_avx2 && binned_avx2() &&
                    Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible;
  array_reduce(space, label, n,
               BinnedSumFunctor<Scalar, Body>{int(size), width, body, flush_interval, avx2},
               result);
}

/// out(j) = the binned accumulator j of `bins` (reduce_bins' layout)
/// rounded to out's value type, for j < width. Asynchronous.
template <class ExecutionSpace, class BinsView, class OutView>
void round_binned(const ExecutionSpace& space, const BinsView& bins, int width,
                  const OutView& out) {
  using Scalar = typename OutView::non_const_value_type;
  Kokkos::parallel_for(
      "gradsum::reduction::reproducible::round",
      Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) { out(j) = Scalar(binned_value(bins.data() + binned_width * j)); });
}

}  // namespace detail
}  // namespace gradsum
