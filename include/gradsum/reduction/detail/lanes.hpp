// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The rank-one block deposit with bins held in vector registers (GCC and
/// Clang vector extensions, where GRADSUM_SIMD_LANES is defined).

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/prefetch.hpp>
#include <gradsum/core/simd.hpp>
#include <gradsum/reduction/detail/binned.hpp>
#include <gradsum/reduction/detail/binned_state.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace gradsum {
namespace detail {

#ifdef GRADSUM_SIMD_LANES
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
/// registers (two groups were the fastest).
constexpr int groups = 2;
constexpr int width = n * groups;

/// a - b, on the fused multiply-add units where the target has them:
/// -(b * 1) + a is a - b exactly (the product is exact, the sum rounds
/// once), which spreads the deposit over more vector pipes.
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void subtract(const f64xn& a, const f64xn& b,
                                                               const f64xn& one, f64xn& out) {
#if defined(__AVX512F__)
  out = f64xn(_mm512_fnmadd_pd(__m512d(b), __m512d(one), __m512d(a)));
#elif defined(__FMA__) || defined(GRADSUM_SIMD_LANES_DISPATCH)
  out = f64xn(_mm256_fnmadd_pd(__m256d(b), __m256d(one), __m256d(a)));
#else
  (void)one;
  out = a - b;
#endif
}

/// deposit_value, lane by lane (`one`: every lane 1).
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void deposit(f64xn& r, f64xn& s0, f64xn& s1,
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

/// Floats to doubles (exact) in one instruction, where GCC's generic
/// conversion takes two to four; the zero-masking form with every lane
/// kept avoids a false "may be used uninitialized" warning of GCC 12.
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void widen(const f32xn& v, f64xn& out) {
#ifdef __AVX512F__
  out = f64xn(_mm512_maskz_cvtps_pd(__mmask8(0xff), __m256(v)));
#else
  out = f64xn(_mm256_cvtps_pd(__m128(v)));
#endif
}
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void widen(const f64xn& v, f64xn& out) {
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

  GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION void see(const V& c) {
    const M bits = M(c) & (M{} + std::numeric_limits<Lane>::max());
    largest = bits > largest ? bits : largest;
  }
  /// Whether every value seen fits its lane's limit.
  GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool fits(const M& limit_bits) const {
    const M outside = ~M(largest <= limit_bits);
    for (int k = 0; k < n; ++k)
      if (outside[k] != 0) return false;
    return true;
  }
};

/// The deposit is compute-bound, so it asks for the next block's rows
/// meanwhile, into the level-2 cache (level 1 was slower).
constexpr int next_rows_locality = 2;

/// The contributions scale[s] * row[s][offset + k] for s < m and
/// k < `width`, deposited into those coordinates' floating-point bins
/// (limit, s0, s1, s2 point at the first), which stay in registers for the
/// whole block, if every one fits its coordinate's limit (false for NaN);
/// says whether it did. If not, the bins in memory are as they were. The
/// same columns of the rows next[s] that are not null are prefetched.
template <class Scalar>
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool deposit_rank_one(
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
GRADSUM_SIMD_LANES_TARGET KOKKOS_FORCEINLINE_FUNCTION bool deposit_column(const Scalar* u, int count,
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

#ifdef GRADSUM_SIMD_LANES
/// Deposits samples first … first + count - 1 of a rank-one block into the
/// state of its d + 2 coordinates (count <= the samples the floating-point
/// bins may take before their next move). Coordinates in groups of
/// lanes::width take lanes::deposit_rank_one, the bias and the loss
/// lanes::deposit_column; a group that meets a value outside its windows,
/// and the remaining coordinates, take BinnedState::add per contribution.
/// The same bits either way (the split does not depend on the order). Not
/// inlined: next to the block's logits and loss, GCC spilled a bin held in
/// a register.
template <class Scalar, class Block>
GRADSUM_SIMD_LANES_TARGET __attribute__((noinline)) void deposit_block(
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

}  // namespace detail
}  // namespace gradsum
