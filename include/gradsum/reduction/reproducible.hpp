// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/prefetch.hpp>
#include <gradsum/reduction/array_reduce.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
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

// The rank-one block deposit holds its floating-point bins in GCC/Clang
// vector registers across a block of samples (namespace lanes): vectors
// of eight doubles where the build targets AVX-512, of four where it
// targets AVX2, and in x86-64 builds that target neither, of four in a
// copy compiled for AVX2 and FMA that runs where the processor has them
// (GRADSUM_LANES_DISPATCH). Vectors wider than the registers would live
// on the stack (eight doubles in such a copy ran 2.5-4x slower than the
// per-sample deposit). Other targets, other compilers and device
// compilation deposit the block a sample at a time with deposit_sample.
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    !defined(__SYCL_DEVICE_ONLY__) && !defined(__NVCOMPILER)
#if defined(__AVX512F__) || defined(__AVX2__)
#define GRADSUM_BINNED_LANES 1
#define GRADSUM_LANES_TARGET
#elif defined(GRADSUM_BINNED_AVX2)
#define GRADSUM_BINNED_LANES 1
#define GRADSUM_LANES_DISPATCH 1
#define GRADSUM_LANES_TARGET __attribute__((target("avx2,fma")))
#endif
#endif
#ifdef GRADSUM_BINNED_LANES
#include <immintrin.h>
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
        acc[1 + b] +=
            std::int64_t(scale2(fp_bin(b)[j] - bin_start(t, b), -int(bin_bits * (t - b))));
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
    deposit_value(r, fp_bin(0)[j], fp_bin(1)[j], fp_bin(2)[j]);
  }

  /// Adds the contribution c to coordinate j, whatever it is: the
  /// floating-point deposit if it fits the window, else add_outside.
  KOKKOS_INLINE_FUNCTION void add(int j, Scalar c) const {
    if (math::fabs(c) <= limit()[j])
      deposit(j, double(c));
    else
      add_outside(j, double(c));
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
    deposit_value(double(c[j]), s0[j], s1[j], s2[j]);
    c[j] = Scalar(0);
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

/// Whether this processor runs deposit_sample_avx2 and the AVX2 and FMA
/// copy of the rank-one deposit (host code).
inline bool binned_avx2() {
#ifdef GRADSUM_BINNED_AVX2
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

/// A block of samples whose contributions have the form of a one-output
/// linear model's (Linear's batched path): sample s < m adds
/// scale[s] * row[s][j] (rounded to Scalar) to coordinate j < d, scale[s]
/// to coordinate d and value[s] to coordinate d + 1, for d + 2 coordinates
/// in all. A body of the binned reduction that fills one per index
/// (`using block_type = RankOneBlock<…>` and `operator()(index, block)`)
/// saves it writing every contribution out, and lets the deposit keep a
/// few coordinates' bins in registers for the whole block.
template <class Scalar, int B>
struct RankOneBlock {
  static constexpr int capacity = B;
  int m = 0;
  const Scalar* row[B];
  /// Where known, the rows the next index will bring, else null: the
  /// deposit asks for them while it works on this block's.
  const Scalar* next[B] = {};
  Scalar scale[B];
  Scalar value[B];
};

/// Whether a binned reduction's body fills a RankOneBlock per index.
template <class Body, class = void>
struct is_rank_one_body : std::false_type {};
template <class Body>
struct is_rank_one_body<Body, std::void_t<typename Body::block_type>> : std::true_type {};

#ifdef GRADSUM_BINNED_LANES
namespace lanes {

// Vectors of n doubles (one register: n = 8 with AVX-512, 4 with AVX2),
// of n floats, and of the integers of their comparisons (GCC/Clang vector
// extensions; operations act lane by lane with IEEE semantics). Vectors
// go by reference only: by value, their ABI depends on the target (GCC's
// -Wpsabi).
#ifdef __AVX512F__
constexpr int n = 8;
#else
constexpr int n = 4;
#endif
typedef double f64xn __attribute__((vector_size(8 * n)));
typedef std::int64_t i64xn __attribute__((vector_size(8 * n)));
typedef float f32xn __attribute__((vector_size(4 * n)));
typedef std::int32_t i32xn __attribute__((vector_size(4 * n)));

template <class Scalar>
struct Of;
template <>
struct Of<float> {
  using value = f32xn;
  using mask = i32xn;
};
template <>
struct Of<double> {
  using value = f64xn;
  using mask = i64xn;
};

/// Vectors of n coordinates per group the rank-one deposit keeps in
/// registers (bench_reduction, float d = 64, AVX-512: one group 5% slower
/// than two, four 5-10% slower).
constexpr int groups = 2;
constexpr int width = n * groups;

/// a - b, on the fused multiply-add units where the target has them:
/// -(b * 1) + a is a - b exactly (the product is exact, the sum rounds
/// once). On AMD Zen 4 additions run on two of the four vector pipes and
/// fused multiply-adds on two others; moving the deposit's subtractions
/// there made it 4% faster (one core, float, d = 64).
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void subtract(const f64xn& a, const f64xn& b,
                                                               const f64xn& one, f64xn& out) {
#if defined(__AVX512F__)
  out = f64xn(_mm512_fnmadd_pd(__m512d(b), __m512d(one), __m512d(a)));
#elif defined(__FMA__) || defined(GRADSUM_LANES_DISPATCH)
  out = f64xn(_mm256_fnmadd_pd(__m256d(b), __m256d(one), __m256d(a)));
#else
  (void)one;
  out = a - b;
#endif
}

/// deposit_value, lane by lane (`one`: every lane 1).
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void deposit(f64xn& r, f64xn& s0, f64xn& s1,
                                                              f64xn& s2, const f64xn& one) {
  f64xn q;
  const f64xn a = s0;
  s0 += f64xn(i64xn(r) | 1);
  subtract(s0, a, one, q);
  subtract(r, q, one, r);
  const f64xn b = s1;
  s1 += f64xn(i64xn(r) | 1);
  subtract(s1, b, one, q);
  subtract(r, q, one, r);
  s2 += f64xn(i64xn(r) | 1);
}

/// Floats to doubles (exact) in one instruction: GCC's generic conversion
/// takes four for eight floats when it prefers 256-bit vectors (its
/// default for recent processors), and two for four. The zero-masking
/// form with every lane kept: GCC 12 warns that _mm512_cvtps_pd's
/// undefined source "may be used uninitialized".
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void widen(const f32xn& v, f64xn& out) {
#ifdef __AVX512F__
  out = f64xn(_mm512_maskz_cvtps_pd(__mmask8(0xff), __m256(v)));
#else
  out = f64xn(_mm256_cvtps_pd(__m128(v)));
#endif
}
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void widen(const f64xn& v, f64xn& out) {
  out = v;
}

/// The window check, lane by lane, as integers: with the sign bit cleared,
/// the bits of a Scalar that is not NaN order as its magnitude, and NaN's
/// exceed infinity's. So |c| <= limit for every c a lane saw exactly when
/// the largest of their magnitude bits is at most the limit's bits, read
/// as signed integers (the limit -1 then admits nothing, 0 only zeros,
/// infinity everything but NaN). A running maximum costs one instruction
/// per vector where a comparison of floating-point values cost three.
template <class Scalar>
struct WindowCheck {
  using V = typename Of<Scalar>::value;
  using M = typename Of<Scalar>::mask;
  using Lane = std::remove_reference_t<decltype(M{}[0])>;
  M largest{};

  GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void see(const V& c) {
    const M bits = M(c) & (M{} + std::numeric_limits<Lane>::max());
    largest = bits > largest ? bits : largest;
  }
  /// Whether every value seen fits its lane's limit.
  GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool fits(const M& limit_bits) const {
    const M outside = ~M(largest <= limit_bits);
    for (int k = 0; k < n; ++k)
      if (outside[k] != 0) return false;
    return true;
  }
};

/// The deposit is compute-bound and reads nothing from memory: asking for
/// the next block's rows meanwhile, into the level-2 cache, saved 14% at
/// float, d = 256 (bench_reduction, 2 threads), where a block's rows are
/// 32 KiB and took as long to load as to deposit. Into level 1, d = 64 was
/// 15% slower.
constexpr int next_rows_locality = 2;

/// The contributions scale[s] * row[s][offset + k] for s < m and
/// k < `width`, deposited into those coordinates' floating-point bins
/// (limit, s0, s1, s2 point at the first), which stay in registers for the
/// whole block, if every one fits its coordinate's limit (false for NaN);
/// says whether it did. If not, the bins in memory are as they were. The
/// same columns of the rows next[s] that are not null are prefetched.
template <class Scalar>
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool deposit_rank_one(
    const Scalar* const* row, const Scalar* const* next, int offset, const Scalar* scale, int m,
    const Scalar* limit, double* s0, double* s1, double* s2) {
  using V = typename Of<Scalar>::value;
  using M = typename Of<Scalar>::mask;
  f64xn a[groups], b[groups], c[groups];
  WindowCheck<Scalar> check[groups];
  for (int g = 0; g < groups; ++g) {
    std::memcpy(&a[g], s0 + n * g, sizeof(f64xn));
    std::memcpy(&b[g], s1 + n * g, sizeof(f64xn));
    std::memcpy(&c[g], s2 + n * g, sizeof(f64xn));
  }
  const f64xn one = f64xn{} + 1.0;
  for (int s = 0; s < m; ++s) {
    const Scalar* x = row[s] + offset;
    if (next[s] != nullptr)
      prefetch_lines<next_rows_locality>(next[s] + offset, width * sizeof(Scalar));
    const Scalar r = scale[s];
    for (int g = 0; g < groups; ++g) {
      V v;
      std::memcpy(&v, x + n * g, sizeof v);
      v = r * v;
      check[g].see(v);
      f64xn t;
      widen(v, t);
      deposit(t, a[g], b[g], c[g], one);
    }
  }
  for (int g = 0; g < groups; ++g) {
    M limit_bits;
    std::memcpy(&limit_bits, limit + n * g, sizeof limit_bits);
    if (!check[g].fits(limit_bits)) return false;
  }
  for (int g = 0; g < groups; ++g) {
    std::memcpy(s0 + n * g, &a[g], sizeof(f64xn));
    std::memcpy(s1 + n * g, &b[g], sizeof(f64xn));
    std::memcpy(s2 + n * g, &c[g], sizeof(f64xn));
  }
  return true;
}

/// The contributions u[0 … count) to one coordinate (limit, bins s0, s1,
/// s2, window t), deposited n at a time into lane bins that start at
/// the window's M_B and are then added to the coordinate's bins, if every
/// one fits the limit; says whether it did (if not, nothing changed).
/// Lanes past the end deposit zeros, which change no bin (S + 2^-1074
/// rounds to S). Exact: each lane's S - M_B is an exact multiple of g_B
/// below 2^51 g_B, and so is their sum with the coordinate's, within the
/// count of samples between moves into the int64 bins (the method above).
template <class Scalar>
GRADSUM_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool deposit_column(const Scalar* u, int count,
                                                                     Scalar limit, std::int64_t t,
                                                                     double& s0, double& s1,
                                                                     double& s2) {
  using V = typename Of<Scalar>::value;
  using M = typename Of<Scalar>::mask;
  const double start[bins_per_window] = {bin_start(t, 0), bin_start(t, 1), bin_start(t, 2)};
  f64xn a = f64xn{} + start[0], b = f64xn{} + start[1], c = f64xn{} + start[2];
  const f64xn one = f64xn{} + 1.0;
  WindowCheck<Scalar> check;
  for (int first = 0; first < count; first += n) {
    V v;
    for (int l = 0; l < n; ++l) v[l] = first + l < count ? u[first + l] : Scalar(0);
    check.see(v);
    f64xn r;
    widen(v, r);
    deposit(r, a, b, c, one);
  }
  const V limits = V{} + limit;
  if (!check.fits(M(limits))) return false;
  a -= start[0];
  b -= start[1];
  c -= start[2];
  double sum_a = 0, sum_b = 0, sum_c = 0;
  for (int l = 0; l < n; ++l) {
    sum_a += a[l];
    sum_b += b[l];
    sum_c += c[l];
  }
  s0 += sum_a;
  s1 += sum_b;
  s2 += sum_c;
  return true;
}

}  // namespace lanes
#endif

#ifdef GRADSUM_BINNED_LANES
/// Deposits samples first … first + count - 1 of a rank-one block into the
/// state of its d + 2 coordinates (count <= the samples the floating-point
/// bins may take before their next move). Coordinates in groups of
/// lanes::width take lanes::deposit_rank_one, the bias and the loss
/// lanes::deposit_column; a group that meets a value outside its windows,
/// and the remaining coordinates, take BinnedState::add per contribution.
/// The same bits either way (the split does not depend on the order). A
/// function of its own: inlined into the reduction's kernel, next to the
/// block's logits and loss, GCC spilled one of the register-held bins to
/// the stack (float, d = 64: a store and a load per sample on the chain of
/// additions into it).
template <class Scalar, class Block>
GRADSUM_LANES_TARGET __attribute__((noinline)) void deposit_block(
    const BinnedState<std::int64_t*, Scalar>& state, int d, const Block& block, int first,
    int count) {
  const Scalar* const* row = block.row + first;
  const Scalar* const* next = block.next + first;
  const Scalar* scale = block.scale + first;
  int j = 0;
  for (; j + lanes::width <= d; j += lanes::width)
    if (!lanes::deposit_rank_one(row, next, j, scale, count, state.limit() + j, state.fp_bin(0) + j,
                                 state.fp_bin(1) + j, state.fp_bin(2) + j))
      for (int s = 0; s < count; ++s)
        for (int k = j; k < j + lanes::width; ++k) state.add(k, Scalar(scale[s] * row[s][k]));
  for (int s = 0; s < count; ++s)
    for (int k = j; k < d; ++k) state.add(k, Scalar(scale[s] * row[s][k]));
  // The bias (scale) and the loss (value), each a column of count values.
  const Scalar* column[2] = {scale, block.value + first};
  for (int c = 0; c < 2; ++c) {
    const int k = d + c;
    if (!lanes::deposit_column(column[c], count, state.limit()[k], state.top()[k],
                               state.fp_bin(0)[k], state.fp_bin(1)[k], state.fp_bin(2)[k]))
      for (int s = 0; s < count; ++s) state.add(k, column[c][s]);
  }
}
#endif

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
  // need it (GRADSUM_LANES_DISPATCH). Host backends only.
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
#ifdef GRADSUM_BINNED_AVX2
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
#ifdef GRADSUM_BINNED_LANES
      if (lanes_run())
        deposit_block(s, width - 2, block, first, count);
      else
#endif
        deposit_each_sample(s, block, first, count);
      *s.count() += count;
    }
  }

#ifdef GRADSUM_BINNED_LANES
  /// Whether deposit_block runs: always in builds for AVX2 or AVX-512; in
  /// builds with the AVX2 and FMA copy, where the processor has both.
  bool lanes_run() const {
#ifdef GRADSUM_LANES_DISPATCH
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
/// registers: bench_reduction, logistic, n = 1e6, 2 threads, -march=native,
/// time / Sum's: float d = 64 7.0 -> 2.4, double d = 64 4.4 -> 1.7); the
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
