// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Binned fixed-point accumulation: the method, the integer format of an
/// accumulator, adding a value, merging and rounding (the reference forms
/// every faster path reproduces).

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>
#include <cstring>

namespace gradsum {
namespace detail {

/// Binned fixed-point accumulation (after Demmel & Nguyen, "Parallel
/// reproducible summation", IEEE Trans. Computers 64(7), 2015, and their
/// ReproBLAS), in the form gradsum uses.
///
/// Bins. The real line is cut into bins of 32 bits at *absolute*
/// boundaries: bin B counts multiples of g_B = 2^(32 B). A finite nonzero
/// v with |v| < 2^e (e = exponent_bound(v)) has window T(v) = floor(e / 32),
/// so |v| < 2^(32 T(v) + 31). An accumulator keeps a window of three bins,
/// T, T-1, T-2, where T is the largest T(v) it has seen.
///
/// Split of one value (the definition everything else reproduces). In a
/// window T >= T(v): r_T = v; for B = T, T-1, T-2: q_B = the multiple of
/// g_B nearest to r_B, ties away from zero, and r_(B-1) = r_B - q_B. Every
/// q_B = k_B g_B with |k_B| <= 2^31 (|r_T| < 2^31 g_T and |r_(B-1)| <=
/// g_B / 2 = 2^31 g_(B-1)); r_(T-3) is dropped. If T > T(v) then
/// |v| < g_T / 2, so q_T = 0 and the split in window T is the split in
/// window T-1 shifted by one bin with its lowest chunk dropped. Hence
/// *raising a window is dropping its lowest bins*, and an accumulator that
/// adds up the k_B of its values holds, whatever the order in which values
/// arrived and whenever its window rose, exactly the sum over its values
/// of k_B(v, T) for its final T. Integer addition is associative, and
/// merging two accumulators raises both to the larger window (dropping
/// bins, which again gives the split in that window), so the bins and the
/// final rounding are the same bits for any order, thread count, backend,
/// partition into parts, or number of ranks.
///
/// Computing q_B in floating point. Let r' be r with the lowest bit of its
/// significand set (set_last_bit). If that bit weighs at most g / 4, r'
/// is never halfway between multiples of g and lies on r's side of every
/// halfway point (r' - r is below one unit of r's last bit, and halfway
/// points are even multiples of it), so rounding r' to nearest, with any
/// tie rule, gives q. The bit weighs at most 2^-21 g for normal r (|r| <=
/// 2^31 g) and 2^-1074 for subnormal r, at most g / 4 in every window the
/// floating-point deposit serves (T >= -31, so g >= 2^-1056).
/// - The reduction's deposit (BinnedSumFunctor) keeps, per coordinate and
///   bin, a double S_B that starts at M_B = 1.5 2^(52 + 32 B), whose
///   binade [2^(52 + 32 B), 2^(53 + 32 B)) has spacing g_B. S + r' rounds
///   to S + q exactly (S is a multiple of g_B), so q = (S + r') - S
///   exactly, and r - q is exact (Sterbenz). Per contribution: three
///   additions of r' into S_T, S_(T-1), S_(T-2) and two subtractions, no
///   branch and no product (a fused multiply-add cannot change a bit), a
///   loop over the coordinates that compilers vectorize. S_B stays in its
///   binade while |S_B - M_B| < 2^51 g_B: after at most 2^19 samples
///   (|q| <= 2^31 g_B), S_B - M_B (exact) is moved into the int64 bin as
///   (S_B - M_B) / g_B and S_B restarts at M_B; also at every window raise,
///   at joins and at the end. Where and when that happens changes no bit.
/// - binned_add (integer format, any magnitude, and windows outside
///   -31 ... 30: values below 2^-993, whose lowest g is below 2^-1072, and
///   from 2^991 on, whose M would overflow): v scaled exactly by 2^(-32
///   (T - 2)), so that g_(T-2) = 1, every r normal wherever a chunk can be
///   nonzero (a scaled value that underflows lies below 2^-1022 and rounds
///   to 0 either way), and q = (r' + 1.5 2^(52 + u)) - 1.5 2^(52 + u) for
///   the bin of g = 2^u: the same rounding of r' with a fixed S.
///
/// Accuracy: every value loses at most g_(T-2) / 2 = 2^(32 T - 65) <=
/// 2^-64 M, with M the largest magnitude in its coordinate (2^(32 T) <=
/// 2^(e-1) <= M), so n values lose at most n 2^-64 M before the final
/// conversion, which rounds twice (about 1 ulp of the result). Plain
/// double summation loses up to about n 2^-53 sum|x|. The int64 bins are
/// exact for up to 2^32 values per coordinate (|k_B| <= 2^31).
///
/// Integer format of one accumulator (what joins, the step and MPI see):
/// {T, bin T, bin T-1, bin T-2} as int64; T = empty_window before the
/// first nonzero value, poisoned_window after a NaN or infinity (the result
/// is then NaN).
constexpr int bin_bits = 32;
constexpr int bins_per_window = 3;
constexpr int binned_width = 1 + bins_per_window;
static_assert(bins_per_window == 3, "deposit_value and the deposit loops spell out three bins");
constexpr std::int64_t empty_window = INT64_MIN;
constexpr std::int64_t poisoned_window = INT64_MAX;
/// The windows the floating-point deposit serves.
constexpr std::int64_t fast_window_min = -31;
constexpr std::int64_t fast_window_max = 30;
/// The most samples the floating-point bins take between two moves into
/// the int64 bins.
constexpr std::int64_t max_flush_interval = std::int64_t(1) << 19;

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

/// The window T(v) = floor(e / 32) of a finite nonzero v (e from
/// exponent_bound, >= -1022, so e + 1056 > 0 and the shift is a floor).
KOKKOS_INLINE_FUNCTION std::int64_t window_of(double v) {
  return std::int64_t((exponent_bound(v) + 1056) >> 5) - 33;
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

/// r with the lowest bit of its significand set (see the method above).
KOKKOS_FORCEINLINE_FUNCTION double set_last_bit(double r) {
  std::uint64_t bits;
  std::memcpy(&bits, &r, sizeof bits);
  bits |= 1;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

/// The floating-point deposit of r into the bins s0, s1, s2 of one
/// coordinate (the method above): three additions of r' and two exact
/// subtractions, no branch.
KOKKOS_FORCEINLINE_FUNCTION void deposit_value(double r, double& s0, double& s1, double& s2) {
  const double a = s0, sum_a = a + set_last_bit(r);
  s0 = sum_a;
  r -= sum_a - a;
  const double b = s1, sum_b = b + set_last_bit(r);
  s1 = sum_b;
  r -= sum_b - b;
  s2 += set_last_bit(r);
}

/// Whether the floating-point deposit serves window t.
KOKKOS_INLINE_FUNCTION bool fast_window(std::int64_t t) {
  return t >= fast_window_min && t <= fast_window_max;
}

/// Adds v to the accumulator `acc` (integer format), for any finite or
/// non-finite v: the reference form of the split, used for the windows the
/// floating-point deposit does not serve, and by tests.
KOKKOS_INLINE_FUNCTION void binned_add(std::int64_t* acc, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits << 1) == 0) return;  // +0 or -0
  if (acc[0] == poisoned_window) return;
  if (((bits >> 52) & 0x7ff) == 0x7ff) {
    acc[0] = poisoned_window;
    for (int k = 1; k < binned_width; ++k) acc[k] = 0;
    return;
  }
  const std::int64_t t_v = window_of(v);
  if (acc[0] == empty_window)
    acc[0] = t_v;
  else
    raise_window(acc, t_v);
  // v in units of the lowest bin: |r| < 2^95.
  double r = scale2(v, -int(bin_bits * (acc[0] - 2)));
  for (int b = 0; b < bins_per_window; ++b) {
    const int unit = bin_bits * (bins_per_window - 1 - b);  // log2 of bin b's g, scaled
    const double fixed = 1.5 * pow2(52 + unit);
    const double q = (set_last_bit(r) + fixed) - fixed;
    r -= q;
    acc[1 + b] += std::int64_t(q * pow2(-unit));
  }
}

/// Merges accumulator `src` into `dst` (integer format).
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

}  // namespace detail
}  // namespace gradsum
