// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The linear model's arithmetic: one sample's logit and gradient, and the
/// batched path on host spaces (Linear::block_gradient, block_residuals):
/// a block's logits, two short rows at a time in vector registers where
/// the target has them, then the loss's block form, then the gradients
/// eight samples per pass.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/detail/row_dot.hpp>

#include <type_traits>

namespace gradsum {
namespace detail {

/// The dot product's partial sums for long and short rows.
template <class Scalar>
constexpr int long_row_sums = 128 / sizeof(Scalar);
template <class Scalar>
constexpr int short_row_sums = 32 / sizeof(Scalar);

/// Whether a row of d values takes 256 bytes or more: the dot product's
/// long form, and half blocks on the batched path.
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool long_rows(int d) {
  return d * int(sizeof(Scalar)) >= 256;
}

/// w . x + b for one sample x[0..d) of theta = (w, b): 128 bytes of
/// partial sums for long rows, 32 for short ones; fused multiply-adds
/// only with Fused (the Sum paths').
template <bool Fused = false, class Scalar>
KOKKOS_INLINE_FUNCTION Scalar linear_logit(const Scalar* theta, const Scalar* x, int d) {
  if (long_rows<Scalar>(d)) return theta[d] + row_dot<long_row_sums<Scalar>, Fused>(theta, x, d);
  return theta[d] + row_dot<short_row_sums<Scalar>, Fused>(theta, x, d);
}

/// g += r (x, 1): one sample's gradient of r z with respect to (w, b).
template <bool Fused = false, class Scalar>
KOKKOS_INLINE_FUNCTION void add_linear_gradient(Scalar r, const Scalar* x, int d, Scalar* g) {
  for (int j = 0; j < d; ++j) g[j] = multiply_add<Fused>(r, x[j], g[j]);
  g[d] += r;
}

/// The batched path of a linear model of d features.
struct LinearBlock {
  int d;

  /// z[s] = the logit of sample s and y[s] its target, for s < m; lanes
  /// m … B-1 keep the padding the caller set (the loss computes and
  /// ignores them). Calls ahead(offset + s) as it starts on sample s
  /// (`ahead` by value, so that its fields stay in registers). Long is
  /// long_rows(), given at compile time so that the short and the long
  /// rows' loops are compiled apart (together, GCC spilled in the long one).
  /// Fused: whether the dot products may fuse their multiply-adds.
  template <bool Long, bool Fused, class Scalar, class Ahead>
  KOKKOS_FUNCTION void logits(const Scalar* theta, const Scalar* const* xs, const Scalar* ys,
                              int m, Scalar* z, Scalar* y, const Ahead ahead,
                              int offset) const {
    int s = 0;
#ifdef GRADSUM_SIMD_ROW_BYTES
    if constexpr (!Long)
      s = with_short_row_groups<Scalar>([&](auto groups) {
        return logit_pairs<decltype(groups)::value, Fused>(theta, xs, m, z, ahead, offset);
      });
#endif
    for (; s < m; ++s) {
      ahead(offset + s);
      z[s] = linear_logit<Fused>(theta, xs[s], d);
    }
    for (s = 0; s < m; ++s) y[s] = ys[s];
  }

#ifdef GRADSUM_SIMD_ROW_BYTES
  /// forward()'s arithmetic, two short rows at a time, for rows of Groups
  /// whole groups of partial sums (and a shorter rest): z[s] for s < m
  /// rounded down to even; returns that count.
  template <int Groups, bool Fused, class Scalar, class Ahead>
  KOKKOS_FORCEINLINE_FUNCTION int logit_pairs(const Scalar* theta, const Scalar* const* xs, int m,
                                              Scalar* z, const Ahead& ahead, int offset) const {
    const Scalar bias = theta[d];
    int s = 0;
    for (; s + 2 <= m; s += 2) {
      ahead(offset + s);
      ahead(offset + s + 1);
      Scalar pair[2];
      row_dot_pair<short_row_sums<Scalar>, Groups, Fused>(theta, xs[s], xs[s + 1], d, pair);
      z[s] = bias + pair[0];
      z[s + 1] = bias + pair[1];
    }
    return s;
  }

  /// f(std::integral_constant<int, G>{}) for G = d / K, the whole groups
  /// of K partial sums in a short row (G < 8): the row's loop then has a
  /// length known at compile time, which the compiler unrolls.
  template <class Scalar, class F>
  KOKKOS_FORCEINLINE_FUNCTION decltype(auto) with_short_row_groups(F&& f) const {
    using std::integral_constant;
    switch (d / short_row_sums<Scalar>) {
      case 0: return f(integral_constant<int, 0>{});
      case 1: return f(integral_constant<int, 1>{});
      case 2: return f(integral_constant<int, 2>{});
      case 3: return f(integral_constant<int, 3>{});
      case 4: return f(integral_constant<int, 4>{});
      case 5: return f(integral_constant<int, 5>{});
      case 6: return f(integral_constant<int, 6>{});
      default: return f(integral_constant<int, 7>{});
    }
  }
#endif

  /// block_gradient for m <= B samples in one go; its samples are
  /// offset … offset + m - 1 of the block, for ahead(). Sum's path: its
  /// multiply-adds are fused where the target has them.
  template <int B, bool Long, class Loss, class Scalar, class Ahead>
  KOKKOS_FUNCTION Scalar sub_block_gradient(const Loss& loss, const Scalar* theta,
                                            const Scalar* const* xs, const Scalar* ys, int m,
                                            Scalar* g, const Ahead& ahead, int offset) const {
    Scalar z[B] = {}, y[B] = {}, dz[B];
    logits<Long, true>(theta, xs, ys, m, z, y, ahead, offset);
    const Scalar total = block_value_and_derivative<B, true>(loss, z, y, m, dz);
    // g += dz_s (x_s, 1), eight samples per pass over g (then four, then
    // one): an eighth of the loads and stores of one backward() per sample.
    // a b + c d with the second product fused, where the target has FMA.
    const auto pair = [](Scalar a, Scalar b, Scalar c, Scalar e) {
      return multiply_add<true>(c, e, a * b);
    };
    int s = 0;
    for (; s + 8 <= m; s += 8) {
      const Scalar *x0 = xs[s], *x1 = xs[s + 1], *x2 = xs[s + 2], *x3 = xs[s + 3];
      const Scalar *x4 = xs[s + 4], *x5 = xs[s + 5], *x6 = xs[s + 6], *x7 = xs[s + 7];
      const Scalar r0 = dz[s], r1 = dz[s + 1], r2 = dz[s + 2], r3 = dz[s + 3];
      const Scalar r4 = dz[s + 4], r5 = dz[s + 5], r6 = dz[s + 6], r7 = dz[s + 7];
      for (int j = 0; j < d; ++j)
        g[j] += (pair(r0, x0[j], r1, x1[j]) + pair(r2, x2[j], r3, x3[j])) +
                (pair(r4, x4[j], r5, x5[j]) + pair(r6, x6[j], r7, x7[j]));
      g[d] += ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
    }
    for (; s + 4 <= m; s += 4) {
      const Scalar *x0 = xs[s], *x1 = xs[s + 1], *x2 = xs[s + 2], *x3 = xs[s + 3];
      const Scalar r0 = dz[s], r1 = dz[s + 1], r2 = dz[s + 2], r3 = dz[s + 3];
      for (int j = 0; j < d; ++j) g[j] += pair(r0, x0[j], r1, x1[j]) + pair(r2, x2[j], r3, x3[j]);
      g[d] += (r0 + r1) + (r2 + r3);
    }
    for (; s < m; ++s) add_linear_gradient<true>(dz[s], xs[s], d, g);
    return total;
  }
};

}  // namespace detail
}  // namespace gradsum
