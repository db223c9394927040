// SPDX-License-Identifier: Apache-2.0
#pragma once

// The dot product of a parameter vector with one sample's row, as the
// linear models take it: K partial sums in a fixed order, so that a
// sample's logit has the same bits wherever it is computed. Fused: whether
// the multiply-adds may be fused (detail::multiply_add): the Sum paths'
// choice; the Reproducible path's are never fused, on any target.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/multiply_add.hpp>
#include <gradsum/core/simd.hpp>

#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// s[0] + ... + s[2W - 1] added pairwise: s[k] += s[k + W] for k < W, then
/// the same for W / 2, down to 1. Spelled out level by level so that
/// compilers keep the partial sums in registers (docs/performance.md).
template <int W, class Scalar>
KOKKOS_FORCEINLINE_FUNCTION Scalar fold(Scalar* s) {
  if constexpr (W == 0) {
    return s[0];
  } else {
    for (int k = 0; k < W; ++k) s[k] += s[k + W];
    return fold<W / 2>(s);
  }
}

#ifdef GRADSUM_SIMD_ROW_BYTES
/// Lanes Offset … Offset + sizeof...(I) - 1 of the vector s.
template <int Offset, class V, int... I>
KOKKOS_FORCEINLINE_FUNCTION auto lanes_of(const V& s, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(s, s, (Offset + I)...);
}

/// fold<W> of the lanes of a vector: halves added, down to one lane.
template <int W, class V>
KOKKOS_FORCEINLINE_FUNCTION auto fold_lanes(const V& s) {
  if constexpr (W == 0) {
    return s[0];
  } else {
    constexpr auto half = std::make_integer_sequence<int, W>();
    return fold_lanes<W / 2>(lanes_of<0>(s, half) + lanes_of<W>(s, half));
  }
}

/// s[i] += s[i + W] within each half of H lanes, for W, W / 2, … 1 (the
/// lanes past a half's first W are not read again).
template <int W, int H, class V, int... I>
KOKKOS_FORCEINLINE_FUNCTION V fold_halves(const V& s, std::integer_sequence<int, I...> lanes) {
  if constexpr (W == 0)
    return s;
  else
    return fold_halves<W / 2, H>(s + __builtin_shufflevector(s, s, (I % H + W < H ? I + W : I)...),
                                 lanes);
}

/// fold_lanes<K / 2> of two vectors a and b at once, the same additions:
/// lane 0 of the result is a's, lane K / 2 is b's. The first level puts
/// a's halves in the low half of one vector and b's in the high half;
/// each later level adds within the halves, so that the two rows share
/// one shuffle and one addition per level.
template <int K, class V, int... I>
KOKKOS_FORCEINLINE_FUNCTION V fold_lanes_pair(const V& a, const V& b,
                                              std::integer_sequence<int, I...>) {
  constexpr int H = K / 2;
  return fold_halves<H / 2, H>(__builtin_shufflevector(a, b, (I < H ? I : K + I - H)...) +
                               __builtin_shufflevector(a, b, (I < H ? I + H : K + I)...),
                               std::integer_sequence<int, I...>());
}

/// row_dot<K> with its K partial sums in one vector register: the same
/// additions in the same order, written out because GCC vectorizes the
/// plain loop badly (docs/performance.md).
template <int K, bool Fused, class Scalar>
inline Scalar row_dot_lanes(const Scalar* a, const Scalar* b, int n) {
  typedef Scalar V __attribute__((vector_size(K * sizeof(Scalar))));
  V v = {};
  int j = 0;
  for (; j + K <= n; j += K) {
    V x, y;
    __builtin_memcpy(&x, a + j, sizeof x);
    __builtin_memcpy(&y, b + j, sizeof y);
    v = multiply_add<Fused>(x, y, v);
  }
  if (j < n) {
    Scalar s0 = v[0];
    for (; j < n; ++j) s0 = multiply_add<Fused>(a[j], b[j], s0);
    v[0] = s0;
  }
  return fold_lanes<K / 2>(v);
}

/// row_dot<K> for K partial sums wider than one vector register: K / L
/// registers of L lanes, the same additions in the same order. Written out
/// because GCC vectorizes the plain loop well only when it may contract it
/// itself, and under gradsum::reproducible it may not (-ffp-contract=off).
template <int K, bool Fused, class Scalar>
inline Scalar row_dot_registers(const Scalar* a, const Scalar* b, int n) {
  constexpr int L = GRADSUM_SIMD_ROW_BYTES / int(sizeof(Scalar));
  typedef Scalar V __attribute__((vector_size(GRADSUM_SIMD_ROW_BYTES)));
  V v[K / L] = {};
  int j = 0;
  for (; j + K <= n; j += K)
    for (int r = 0; r < K / L; ++r) {
      V x, y;
      __builtin_memcpy(&x, a + j + r * L, sizeof x);
      __builtin_memcpy(&y, b + j + r * L, sizeof y);
      v[r] = multiply_add<Fused>(x, y, v[r]);
    }
  Scalar s[K];
  __builtin_memcpy(s, v, sizeof s);
  for (; j < n; ++j) s[0] = multiply_add<Fused>(a[j], b[j], s[0]);
  return fold<K / 2>(s);
}

/// out[0] = row_dot<K>(a, b0, n), out[1] = row_dot<K>(a, b1, n): two rows
/// in one loop, the same additions for each, so that the two chains of
/// additions overlap. Groups must be n / K, the number of whole groups:
/// the loop's length, known at compile time.
template <int K, int Groups, bool Fused, class Scalar>
inline void row_dot_pair(const Scalar* a, const Scalar* b0, const Scalar* b1, int n,
                         Scalar* out) {
  typedef Scalar V __attribute__((vector_size(K * sizeof(Scalar))));
  V v0 = {}, v1 = {};
  int j = 0;
  for (; j < Groups * K; j += K) {
    V x, y0, y1;
    __builtin_memcpy(&x, a + j, sizeof x);
    __builtin_memcpy(&y0, b0 + j, sizeof y0);
    __builtin_memcpy(&y1, b1 + j, sizeof y1);
    v0 = multiply_add<Fused>(x, y0, v0);
    v1 = multiply_add<Fused>(x, y1, v1);
  }
  if (j < n) {
    Scalar s0 = v0[0], s1 = v1[0];
    for (; j < n; ++j) {
      s0 = multiply_add<Fused>(a[j], b0[j], s0);
      s1 = multiply_add<Fused>(a[j], b1[j], s1);
    }
    v0[0] = s0;
    v1[0] = s1;
  }
  const V folded = fold_lanes_pair<K>(v0, v1, std::make_integer_sequence<int, K>());
  out[0] = folded[0];
  out[1] = folded[K / 2];
}
#endif

/// a[0 … n) . b[0 … n) with K independent partial sums, added pairwise at
/// the end: s[k] takes the products j = k, k + K, k + 2K, …, and the
/// products past the last whole group of K go to s[0]. One chain of
/// additions would be slower than reading the data (without -ffast-math
/// the compiler may not reorder it). The order of the additions depends on
/// K and n only, never on the target; with Fused, whether the
/// multiply-adds are fused does. A vector register holds the partial sums
/// where they fit one (more registers were slower).
template <int K, bool Fused, class Scalar>
KOKKOS_INLINE_FUNCTION Scalar row_dot(const Scalar* a, const Scalar* b, int n) {
#ifdef GRADSUM_SIMD_ROW_BYTES
  if constexpr (K * sizeof(Scalar) <= GRADSUM_SIMD_ROW_BYTES)
    return row_dot_lanes<K, Fused>(a, b, n);
  else
    return row_dot_registers<K, Fused>(a, b, n);
#endif
  Scalar s[K] = {};
  int j = 0;
  for (; j + K <= n; j += K)
    for (int k = 0; k < K; ++k) s[k] = multiply_add<Fused>(a[j + k], b[j + k], s[k]);
  for (; j < n; ++j) s[0] = multiply_add<Fused>(a[j], b[j], s[0]);
  return fold<K / 2>(s);
}

#ifdef GRADSUM_SIMD_ROW_BYTES
/// Lane r of one half of merge_sums(a, b): lane `offset` of item r / (W/2)
/// (items 0 … N-1 from a, N … 2N-1 from b), W lanes per item.
template <int L, int N, int W, int Offset>
constexpr int merge_lane(int r) {
  const int q = r / (W / 2), k = r % (W / 2);
  return (q < N ? 0 : L) + (q % N) * W + k + Offset;
}
template <int L, int N, int W, class V, int... R>
KOKKOS_FORCEINLINE_FUNCTION V merge_sums(const V& a, const V& b,
                                         std::integer_sequence<int, R...>) {
  return __builtin_shufflevector(a, b, merge_lane<L, N, W, 0>(R)...) +
         __builtin_shufflevector(a, b, merge_lane<L, N, W, W / 2>(R)...);
}
/// Folds B vectors of L partial sums (one sum wanted per vector) into B/L
/// vectors of L sums each: each level adds the halves of every item and
/// packs two vectors' items into one, so that no lane is added alone.
template <int L, int N, int B, class V>
KOKKOS_FORCEINLINE_FUNCTION void fold_rows(V* v) {
  if constexpr (N < L && B > 1) {
    for (int i = 0; i < B / 2; ++i)
      v[i] = merge_sums<L, N, L / N>(v[2 * i], v[2 * i + 1], std::make_integer_sequence<int, L>());
    fold_rows<L, 2 * N, B / 2>(v);
  }
}
#endif

/// out[s] = w . x[s] for the B rows x[s] of n values: the B rows' partial
/// sums in B vector registers, so that each piece of w is read once for
/// all of them and the B chains of additions overlap. 32 bytes' worth of
/// partial sums per row, with vector registers or without: the same order
/// on every target.
template <int B, bool Fused, class Scalar>
KOKKOS_INLINE_FUNCTION void block_dots(const Scalar* w, const Scalar* const* x, int n,
                                       Scalar* out) {
#ifdef GRADSUM_SIMD_ROW_BYTES
  constexpr int L = 32 / int(sizeof(Scalar));
  static_assert(B % L == 0, "block_dots: B must be a multiple of the lanes");
  typedef Scalar V __attribute__((vector_size(L * sizeof(Scalar))));
  V acc[B] = {};
  int j = 0;
  for (; j + L <= n; j += L) {
    V wv;
    __builtin_memcpy(&wv, w + j, sizeof wv);
    for (int s = 0; s < B; ++s) {
      V xv;
      __builtin_memcpy(&xv, x[s] + j, sizeof xv);
      acc[s] = multiply_add<Fused>(wv, xv, acc[s]);
    }
  }
  for (; j < n; ++j)
    for (int s = 0; s < B; ++s) acc[s][0] = multiply_add<Fused>(w[j], x[s][j], acc[s][0]);
  fold_rows<L, 1, B>(acc);
  for (int s = 0; s < B; ++s) out[s] = acc[s / L][s % L];
#else
  for (int s = 0; s < B; ++s) out[s] = row_dot<32 / int(sizeof(Scalar)), Fused>(w, x[s], n);
#endif
}

}  // namespace detail
}  // namespace gradsum
