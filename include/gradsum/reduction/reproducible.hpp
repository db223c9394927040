// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/array_reduce.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

// The deposit loop gets a second, AVX2 copy on x86-64 host compilers that
// do not target AVX2 already; it runs where the processor has AVX2. It
// performs the same IEEE additions as the portable loop, so the bits are
// the same; only the vector width changes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#define GRADSUM_BINNED_AVX2 1
#endif

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

/// To with the const and volatile qualifiers of From.
template <class From, class To>
struct copy_cv { using type = To; };
template <class From, class To>
struct copy_cv<const From, To> { using type = const To; };
template <class From, class To>
struct copy_cv<volatile From, To> { using type = volatile To; };
template <class From, class To>
struct copy_cv<const volatile From, To> { using type = const volatile To; };

/// The largest Scalar at most `limit` (double: itself): for a Scalar c,
/// |c| <= limit exactly when |c| <= limit_as<Scalar>(limit).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar limit_as(double limit) {
  Scalar s = Scalar(limit);
  if constexpr (sizeof(Scalar) == sizeof(float)) {
    if (double(s) > limit) {  // rounded up (to infinity too): one step down
      std::uint32_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      bits -= 1;  // s > limit >= 0 here
      std::memcpy(&s, &bits, sizeof s);
    }
  }
  return s;
}

/// Slots (of int64) of the reduction's work buffer for `width`
/// coordinates: the state of the floating-point deposit, whose first
/// binned_width * width slots hold the integer-format accumulators when the
/// reduction is done.
KOKKOS_INLINE_FUNCTION constexpr std::size_t binned_work_size(std::size_t width) {
  return 9 * width + 1;
}

/// S_B's starting value M_B = 1.5 2^(52 + 32 B) for bin b (B = t - b) of a
/// window the floating-point deposit serves; 1.5 (spacing 2^-52) for the
/// others, whose S only ever receives zeros (empty) or nothing that counts.
KOKKOS_INLINE_FUNCTION double bin_start(std::int64_t t, int b) {
  return fast_window(t) ? 1.5 * pow2(int(52 + bin_bits * (t - b))) : 1.5;
}

/// The reduction's state for `w` coordinates, structure of arrays in one
/// int64 buffer so that a sample's deposit runs over contiguous arrays:
/// windows T; limits as Scalar (a contribution c fits window T if |c| <=
/// limit: the largest Scalar below 2^(32 T + 31); 0 when empty, -1 for the
/// windows the floating-point deposit does not serve, infinity when
/// poisoned); the floating-point bins S_B for B = T, T-1, T-2; the int64
/// bins; the count of samples since the last flush; room for one sample's
/// contributions. Every region is read and written as one type.
template <class Pointer, class Scalar>
struct BinnedState {
  Pointer base;
  int w;

  template <class T>
  KOKKOS_INLINE_FUNCTION auto region(int k) const {
    using Target = typename copy_cv<std::remove_pointer_t<Pointer>, T>::type;
    return reinterpret_cast<Target*>(base + std::size_t(k) * w);
  }
  KOKKOS_INLINE_FUNCTION auto top() const { return base; }
  KOKKOS_INLINE_FUNCTION auto limit() const { return region<Scalar>(1); }
  KOKKOS_INLINE_FUNCTION auto fp_bin(int b) const { return region<double>(2 + b); }
  KOKKOS_INLINE_FUNCTION auto int_bin(int b) const { return base + std::size_t(5 + b) * w; }
  KOKKOS_INLINE_FUNCTION auto count() const { return base + std::size_t(8) * w; }
  KOKKOS_INLINE_FUNCTION auto scratch() const { return base + std::size_t(8) * w + 1; }

  /// Window t for coordinate j: its limit and its floating-point bins'
  /// starting values (their content must be in the int64 bins already).
  KOKKOS_INLINE_FUNCTION void set_window(int j, std::int64_t t) const {
    top()[j] = t;
    double lim = -1;
    if (t == empty_window) {
      lim = 0;
    } else if (t == poisoned_window) {
      const std::uint64_t inf = 0x7ff0000000000000ULL;
      std::memcpy(&lim, &inf, sizeof lim);
    } else if (fast_window(t)) {
      const double bound = pow2(int(bin_bits * t + bin_bits - 1));  // 2^(32 T + 31)
      std::uint64_t bits;
      std::memcpy(&bits, &bound, sizeof bits);
      bits -= 1;  // the largest double below it
      std::memcpy(&lim, &bits, sizeof lim);
    }
    limit()[j] = limit_as<Scalar>(lim);
    for (int b = 0; b < bins_per_window; ++b) fp_bin(b)[j] = bin_start(t, b);
  }

  /// Coordinate j in integer format (its floating-point bins moved in).
  KOKKOS_INLINE_FUNCTION void load(int j, std::int64_t* acc) const {
    const std::int64_t t = top()[j];
    acc[0] = t;
    for (int b = 0; b < bins_per_window; ++b) {
      acc[1 + b] = int_bin(b)[j];
      if (fast_window(t))
        acc[1 + b] += std::int64_t(scale2(fp_bin(b)[j] - bin_start(t, b), -int(bin_bits * (t - b))));
    }
  }

  /// Stores coordinate j from integer format, floating-point bins restarted.
  KOKKOS_INLINE_FUNCTION void store(int j, const std::int64_t* acc) const {
    set_window(j, acc[0]);
    for (int b = 0; b < bins_per_window; ++b)
      int_bin(b)[j] = acc[0] == poisoned_window ? 0 : acc[1 + b];
  }

  /// Moves every coordinate's floating-point bins into its int64 bins.
  KOKKOS_INLINE_FUNCTION void flush() const {
    for (int j = 0; j < w; ++j) {
      std::int64_t acc[binned_width];
      load(j, acc);
      store(j, acc);
    }
    *count() = 0;
  }

  /// The floating-point deposit of r into coordinate j (|r| <= its limit);
  /// the same operations as deposit_sample's loop.
  KOKKOS_INLINE_FUNCTION void deposit(int j, double r) const {
    for (int b = 0; b < bins_per_window - 1; ++b) {
      const double s = fp_bin(b)[j];
      const double sum = s + set_last_bit(r);
      fp_bin(b)[j] = sum;
      r -= sum - s;
    }
    fp_bin(bins_per_window - 1)[j] += set_last_bit(r);
  }

  /// Adds v to coordinate j when it does not fit the window's limit: a
  /// window raise (after moving the floating-point bins out), the first
  /// value, a NaN or infinity, or a window the floating-point deposit does
  /// not serve.
  KOKKOS_INLINE_FUNCTION void add_outside(int j, double v) const {
    std::int64_t acc[binned_width];
    load(j, acc);
    binned_add(acc, v);
    store(j, acc);
  }
};

/// Deposits one sample's w contributions c into the floating-point bins
/// s0, s1, s2 if every one fits its window (|c_j| <= limit_j, false for
/// NaN), and says whether it did; if it did, c is zero again, ready for
/// the next sample. Two branch-free loops, in forms GCC vectorizes with
/// SSE2 already.
template <class Scalar>
KOKKOS_FORCEINLINE_FUNCTION bool deposit_sample(Scalar* KOKKOS_RESTRICT c,
                                                const Scalar* KOKKOS_RESTRICT limit,
                                                double* KOKKOS_RESTRICT s0,
                                                double* KOKKOS_RESTRICT s1,
                                                double* KOKKOS_RESTRICT s2, int w) {
  if constexpr (sizeof(Scalar) == sizeof(float)) {
    int outside = 0;
    for (int j = 0; j < w; ++j) outside |= math::fabs(c[j]) <= limit[j] ? 0 : -1;
    if (outside != 0) return false;
  } else {
    // The bits of 0.0 or 1.0, or-ed: a double sum would be added in order.
    std::uint64_t outside = 0;
    for (int j = 0; j < w; ++j) {
      const double flag = math::fabs(c[j]) <= limit[j] ? 0.0 : 1.0;
      std::uint64_t bits;
      std::memcpy(&bits, &flag, sizeof bits);
      outside |= bits;
    }
    if (outside != 0) return false;
  }
  for (int j = 0; j < w; ++j) {
    double r = double(c[j]);
    c[j] = Scalar(0);
    const double a = s0[j], sum_a = a + set_last_bit(r);
    s0[j] = sum_a;
    r -= sum_a - a;
    const double b = s1[j], sum_b = b + set_last_bit(r);
    s1[j] = sum_b;
    r -= sum_b - b;
    s2[j] += set_last_bit(r);
  }
  return true;
}

#ifdef GRADSUM_BINNED_AVX2
/// deposit_sample compiled for AVX2 (the same operations, four lanes).
template <class Scalar>
__attribute__((target("avx2"), noinline)) bool deposit_sample_avx2(
    Scalar* KOKKOS_RESTRICT c, const Scalar* KOKKOS_RESTRICT limit,
    double* KOKKOS_RESTRICT s0, double* KOKKOS_RESTRICT s1, double* KOKKOS_RESTRICT s2, int w) {
  return deposit_sample(c, limit, s0, s1, s2, w);
}
#endif

/// Whether this processor runs deposit_sample_avx2 (host code).
inline bool binned_avx2() {
#ifdef GRADSUM_BINNED_AVX2
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

/// The Kokkos array reduction behind Reproducible over `width`
/// coordinates (value_count = binned_work_size(width)): per sample, the
/// body's contributions, then deposit_sample, or, rarely, the careful path
/// per coordinate. Joins and the final step work in integer format; the
/// final step leaves the width integer accumulators at the front.
template <class Scalar, class Body>
struct BinnedSumFunctor {
  using value_type = std::int64_t[];
  using size_type = int;
  int value_count;
  int width;
  Body body;
  std::int64_t flush_interval = max_flush_interval;
  bool avx2 = false;  // run deposit_sample_avx2 (host backends only)

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
    const BinnedState<std::int64_t*, Scalar> s{acc, width};
    // The sample's contributions, gathered in the scratch part (whose
    // int64 slots are at least as large and aligned as a Scalar; zeros
    // from init or the previous sample).
    Scalar* contribution = reinterpret_cast<Scalar*>(s.scratch());
    body(i, contribution);
    bool done;
#ifdef GRADSUM_BINNED_AVX2
    if (avx2)
      done = deposit_sample_avx2(contribution, s.limit(), s.fp_bin(0), s.fp_bin(1), s.fp_bin(2),
                                 width);
    else
#endif
      done = deposit_sample(contribution, s.limit(), s.fp_bin(0), s.fp_bin(1), s.fp_bin(2), width);
    if (!done) {
      for (int j = 0; j < width; ++j) {
        if (math::fabs(contribution[j]) <= s.limit()[j])
          s.deposit(j, double(contribution[j]));
        else
          s.add_outside(j, double(contribution[j]));
        contribution[j] = Scalar(0);
      }
    }
    if (++*s.count() >= flush_interval) s.flush();
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
void round_binned(const ExecutionSpace& space, const BinsView& bins, int width, const OutView& out) {
  using Scalar = typename OutView::non_const_value_type;
  Kokkos::parallel_for(
      "gradsum::reduction::reproducible::round", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) { out(j) = Scalar(binned_value(bins.data() + binned_width * j)); });
}

}  // namespace detail

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
/// additions into bins that are moved into int64 bins now and then; the
/// step sums the int64 bins across ranks (one small extra collective
/// agrees on the bin windows), so the cross-rank sum is exact too.
///
/// What it sums are the contributions the model and loss compute, so the
/// same bits across backends also need the same contributions: the same
/// floating-point operations (no contraction of a * b + c into a fused
/// multiply-add, which nvcc does unless given --fmad=false, and host
/// compilers do when targeting FMA hardware unless given
/// -ffp-contract=off) and the same math functions (CUDA's exp and log may
/// differ from the host's in the last bit, which logistic and softmax
/// losses see). Within one build, thread counts, partitions and rank
/// counts never change a bit.
///
/// Needs the Analytic gradient policy.
struct Reproducible {
  /// The step aggregates this reduction's integer bins, not its result.
  static constexpr bool binned = true;
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
