// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>
#include <cstring>
#include <string>

namespace gradsum {
namespace detail {

/// Binned fixed-point accumulation (after Demmel & Nguyen, "Parallel
/// reproducible summation", IEEE Trans. Computers 64(7), 2015, and their
/// ReproBLAS), in the form gradsum uses:
///
/// The real line is cut into bins of 32 bits at *absolute* boundaries:
/// bin b holds the multiples of 2^(32b) below 2^(32(b+1)). An accumulator
/// keeps a window of three bins, t, t-1, t-2, where t is the bin of the
/// largest magnitude it has seen, as int64 sums of the 32-bit chunks of
/// every value in those bins. Each value is split exactly (scaling by
/// powers of two and truncation are exact); its bits below bin t-2 are
/// dropped. Adding integers is associative, and a window only ever moves
/// up by dropping whole bins whose content does not depend on the order
/// of the values, so the bins, and the final conversion to floating point,
/// are the same bits for any order, thread count, backend, partition into
/// parts, or number of ranks.
///
/// Accuracy: every value loses less than 2^(32(t-2)) <= 2^-64 times the
/// largest magnitude M in its coordinate, so n values lose at most
/// n 2^-64 M, and the final conversion rounds twice (about 1 ulp of the
/// result). Plain double summation loses up to about n 2^-53 sum|x|.
/// Exact in the bins for up to 2^30 values per coordinate (the int64 sums
/// cannot overflow below that).
///
/// Layout of one accumulator: {t, bin t, bin t-1, bin t-2} as int64;
/// t = empty_window before the first nonzero value, poisoned_window after a
/// NaN or infinity (the result is then NaN).
constexpr int bin_bits = 32;
constexpr int bins_per_window = 3;
constexpr int binned_width = 1 + bins_per_window;
constexpr std::int64_t empty_window = INT64_MIN;
constexpr std::int64_t poisoned_window = INT64_MAX;

/// 2^k for -1022 <= k <= 1023, exact.
KOKKOS_INLINE_FUNCTION double pow2(int k) {
  const std::uint64_t bits = std::uint64_t(k + 1023) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// v * 2^k for |k| up to 2046 in two exact steps.
KOKKOS_INLINE_FUNCTION double scale2(double v, int k) {
  const int half = k / 2;
  return v * pow2(half) * pow2(k - half);
}

/// e with |v| < 2^e (frexp's exponent for normal v; -1022 for subnormal),
/// or 2000 for infinity and NaN.
KOKKOS_INLINE_FUNCTION int exponent_bound(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int raw = int((bits >> 52) & 0x7ff);
  if (raw == 0x7ff) return 2000;
  return raw == 0 ? -1022 : raw - 1022;
}

KOKKOS_INLINE_FUNCTION std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Moves the window of `acc` up to top bin `t` (>= its own), dropping the
/// bins that fall out.
KOKKOS_INLINE_FUNCTION void raise_window(std::int64_t* acc, std::int64_t t) {
  const std::int64_t shift = t - acc[0];
  if (shift <= 0) return;
  for (int k = bins_per_window - 1; k >= 0; --k)
    acc[1 + k] = k - shift >= 0 ? acc[1 + k - shift] : 0;
  acc[0] = t;
}

/// Bits [32 (x/32) …) of the 53-bit integer m shifted left by x (right by
/// -x), as the 32-bit piece at shift x: (m * 2^x) mod 2^32, truncated.
KOKKOS_INLINE_FUNCTION std::int64_t chunk_of(std::uint64_t m, int x) {
  if (x >= 32 || x <= -64) return 0;
  return std::int64_t((x >= 0 ? m << x : m >> -x) & 0xffffffffULL);
}

/// Adds v to the accumulator `acc`. The hot path of the reduction, in
/// integer arithmetic only: |v| = m 2^p with m the 53-bit significand, and
/// the three 32-bit chunks of floor(|v| / 2^(32 (t-2))) are pieces of m
/// shifted, independent of each other (no chain of conversions); they get
/// v's sign. The same chunks as truncating v 2^(-32 t) and peeling 32 bits
/// at a time in floating point, at a fraction of the latency.
KOKKOS_INLINE_FUNCTION void binned_add(std::int64_t* acc, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits << 1) == 0) return;  // +0 or -0
  const int raw = int((bits >> 52) & 0x7ff);
  // e with |v| < 2^e (subnormals: -1022); its bin floor(e / 32) by a shift
  // of the positive e + 1056.
  const int e = raw == 0 ? -1022 : raw - 1022;
  const std::int64_t t_v = std::int64_t((e + 1056) >> 5) - 33;
  std::int64_t t = acc[0];
  // One rarely taken branch for everything unusual: a new top bin (also
  // the first value: empty_window is below every bin), a NaN or infinity,
  // an accumulator already poisoned.
  if (t_v > t || raw == 0x7ff || t == poisoned_window) {
    if (t == poisoned_window) return;
    if (raw == 0x7ff) {
      acc[0] = poisoned_window;
      return;
    }
    if (t == empty_window)
      acc[0] = t_v;
    else
      raise_window(acc, t_v);
    t = t_v;
  }
  const std::uint64_t m = (bits & 0xfffffffffffffULL) | (raw == 0 ? 0 : 0x10000000000000ULL);
  const int p = (raw == 0 ? 1 : raw) - 1075;  // |v| = m 2^p
  // |v| / 2^(32 (t-2)) = m 2^shift, shift <= 43 since |v| < 2^(32 (t+1)).
  const int shift = p - int(bin_bits * (t - 2));
  const std::int64_t sign = std::int64_t(bits >> 63);  // 1 for negative v
  for (int b = 0; b < bins_per_window; ++b) {
    const std::int64_t chunk = chunk_of(m, shift - bin_bits * (bins_per_window - 1 - b));
    acc[1 + b] += (chunk ^ -sign) + sign;  // chunk with v's sign
  }
}

/// Merges accumulator `src` into `dst`.
KOKKOS_INLINE_FUNCTION void binned_merge(std::int64_t* dst, const std::int64_t* src) {
  if (src[0] == empty_window || dst[0] == poisoned_window) return;
  if (src[0] == poisoned_window || dst[0] == empty_window) {
    for (int k = 0; k < binned_width; ++k) dst[k] = src[k];
    return;
  }
  std::int64_t shifted[binned_width];
  for (int k = 0; k < binned_width; ++k) shifted[k] = src[k];
  if (src[0] > dst[0]) raise_window(dst, src[0]);
  raise_window(shifted, dst[0]);
  for (int k = 1; k < binned_width; ++k) dst[k] += shifted[k];
}

/// The accumulated value, rounded to double the same way everywhere: the
/// carries are normalised exactly in int64, then the bins are combined
/// with products by powers of two only (exact, so a fused multiply-add
/// cannot change the result).
KOKKOS_INLINE_FUNCTION double binned_value(const std::int64_t* acc) {
  if (acc[0] == empty_window) return 0.0;
  if (acc[0] == poisoned_window) {
    const std::uint64_t quiet_nan = 0x7ff8000000000000ULL;
    double nan;
    std::memcpy(&nan, &quiet_nan, sizeof nan);
    return nan;
  }
  std::int64_t b[bins_per_window];
  for (int k = 0; k < bins_per_window; ++k) b[k] = acc[1 + k];
  for (int k = bins_per_window - 1; k > 0; --k) {
    const std::int64_t carry = b[k] >> bin_bits;  // floor division by 2^32
    b[k] -= carry * (std::int64_t(1) << bin_bits);
    b[k - 1] += carry;
  }
  double low = 0;
  for (int k = bins_per_window - 1; k > 0; --k) low = (low + double(b[k])) * pow2(-bin_bits);
  return scale2(double(b[0]) + low, int(bin_bits * acc[0]));
}

/// The Kokkos array reduction behind Reproducible: `width` binned
/// accumulators, then room for one sample's `width` contributions.
template <class Scalar, class Body>
struct BinnedSumFunctor {
  using value_type = std::int64_t[];
  using size_type = int;
  int value_count;  // width * (binned_width + 1)
  int width;
  Body body;

  KOKKOS_FUNCTION void init(std::int64_t* acc) const {
    for (int j = 0; j < width; ++j) {
      acc[binned_width * j] = empty_window;
      for (int k = 1; k < binned_width; ++k) acc[binned_width * j + k] = 0;
    }
    for (int j = binned_width * width; j < value_count; ++j) acc[j] = 0;
  }
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t* acc) const {
    // The sample's contributions, gathered in the scratch part (whose
    // int64 slots are at least as large and aligned as a Scalar).
    Scalar* contribution = reinterpret_cast<Scalar*>(acc + binned_width * width);
    for (int j = 0; j < width; ++j) contribution[j] = Scalar(0);
    body(i, contribution);
    for (int j = 0; j < width; ++j)
      binned_add(acc + binned_width * j, double(contribution[j]));
  }
  KOKKOS_FUNCTION void join(std::int64_t* dst, const std::int64_t* src) const {
    for (int j = 0; j < width; ++j) binned_merge(dst + binned_width * j, src + binned_width * j);
  }
#if KOKKOS_VERSION < 40000
  // Kokkos 3.x recognises only a join with volatile arguments, and replaces
  // a join it does not recognise by an element-wise sum without a word.
  KOKKOS_FUNCTION void join(volatile std::int64_t* dst, const volatile std::int64_t* src) const {
    for (int j = 0; j < width; ++j) {
      std::int64_t a[binned_width], b[binned_width];
      for (int k = 0; k < binned_width; ++k) {
        a[k] = dst[binned_width * j + k];
        b[k] = src[binned_width * j + k];
      }
      binned_merge(a, b);
      for (int k = 0; k < binned_width; ++k) dst[binned_width * j + k] = a[k];
    }
  }
#endif
};

}  // namespace detail

/// In-process reduction whose result is bit-for-bit the same for any
/// thread count, backend, order and partition of the samples, and - with
/// a distributed aggregation - any number of ranks: every contribution is
/// split exactly into 32-bit chunks at absolute bin boundaries and the
/// chunks are added as integers (see detail::binned_add for the method,
/// after Demmel & Nguyen's ReproBLAS, and its error bound: at most
/// n 2^-64 max|x| per coordinate before one final rounding, at least as
/// accurate as plain double summation). Works for float and double data
/// (contributions are split in double). The step sums the integer bins
/// across ranks (one small extra collective agrees on the bin windows),
/// so the cross-rank sum is exact too. Costs about one integer split per
/// contribution on top of the gradient itself.
///
/// Needs the Analytic gradient policy.
struct Reproducible {
  /// The step aggregates this reduction's integer bins, not its result.
  static constexpr bool binned = true;
  static const char* name() { return "reproducible"; }

  /// Sums body(i, acc) over i in [0, n) into binned accumulators in
  /// `bins` (width * 4 int64, in a memory space the execution space can
  /// access). Asynchronous.
  template <class Scalar, class ExecutionSpace, class Body, class BinsView>
  void reduce_bins(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                   int width, const Body& body, const BinsView& bins) const {
    using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::View<std::int64_t*, typename BinsView::memory_space,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        result(bins.data(), std::size_t(width) * (detail::binned_width + 1));
    Kokkos::parallel_reduce(
        label, Policy(space, 0, n),
        detail::BinnedSumFunctor<Scalar, Body>{width * (detail::binned_width + 1), width, body},
        result);
  }

  /// Like Sum::reduce: the reproducible sum of body(i, acc) rounded to
  /// Scalar into out(0 … width). Allocates a work buffer of 5 width int64
  /// values per call (the step's own path reuses its buffers instead).
  /// Blocking.
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView& out) const {
    using Scalar = typename OutView::non_const_value_type;
    using Memory = typename OutView::memory_space;
    Kokkos::View<std::int64_t*, Memory> bins(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::reduction::reproducible::bins"),
        std::size_t(width) * (detail::binned_width + 1));
    reduce_bins<Scalar>(space, label, n, width, body, bins);
    Kokkos::parallel_for(
        "gradsum::reduction::reproducible::round", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
        KOKKOS_LAMBDA(int j) { out(j) = Scalar(detail::binned_value(bins.data() + detail::binned_width * j)); });
    space.fence();
  }
};

}  // namespace gradsum
