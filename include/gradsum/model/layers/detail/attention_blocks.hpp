// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Register blocks for attention's kernels (model/layers/attention.hpp):
/// each kernel index works on R rows of one (window, head) at once, so that
/// every value it loads from K^T, V^T, K, V, Q or dO serves R rows, and the
/// R x W sums it builds stay in registers (fixed R and W, the loops over
/// them unrolled). Each sum still adds its terms one by one in the order of
/// the index it runs over, as the one-row loops did, so its bits depend
/// neither on the blocking nor on the thread count.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/multiply_add.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// The blocks for kernels on Space: on the host, R = 4 rows of a (window,
/// head) per kernel index, scores in chunks of 32 keys, weighted sums in
/// chunks of 32 columns (4 x 32 floats are 8 AVX-512 registers; a head of
/// width 32 is one chunk, so each weight is loaded once); on a device,
/// where a thread's registers are few and threads many, one row per index
/// and chunks of 8.
template <class Space>
struct AttentionBlocking {
  static constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  static constexpr int rows = host ? 4 : 1;
  static constexpr int keys = host ? 32 : 8;
  static constexpr int columns = host ? 32 : 8;
};

/// out[r][at + w] = sum over j < n, in order, of (weight[r][j wstride]
/// scale) m[j mstride + at + w], for w < W, each sum from 0; written for
/// the first `rows` of the R rows (the others repeat a valid row, and are
/// dropped). The scores Q K^T are this with the query's columns as
/// weights and the rows of K^T; O, dQ, dK and dV with rows of P or dS as
/// weights and scale 1 (exact, so the same bits as without it).
template <int R, int W, class Scalar>
KOKKOS_FORCEINLINE_FUNCTION void attention_block(const Scalar* const (&weight)[R],
                                                 std::int64_t wstride, int n, const Scalar* m,
                                                 std::int64_t mstride, Scalar scale,
                                                 Scalar* const (&out)[R], int at, int rows) {
  Scalar sum[R][W];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) sum[r][w] = 0;
  for (int j = 0; j < n; ++j) {
    const Scalar* mj = m + std::int64_t(j) * mstride + at;
    for (int r = 0; r < R; ++r) {
      const Scalar a = weight[r][std::int64_t(j) * wstride] * scale;
      for (int w = 0; w < W; ++w) sum[r][w] = multiply_add<true>(a, mj[w], sum[r][w]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int w = 0; w < W; ++w) out[r][at + w] = sum[r][w];
}

/// attention_block over out[r][at .. columns): chunks of W while they fit
/// in `limit` values of each row of m and out, then of W / 2, W / 4, ...
/// down to one column at a time.
template <int R, int W, class Scalar>
KOKKOS_INLINE_FUNCTION void attention_rows(const Scalar* const (&weight)[R], std::int64_t wstride,
                                           int n, const Scalar* m, std::int64_t mstride,
                                           Scalar scale, Scalar* const (&out)[R], int columns,
                                           int limit, int rows, int at = 0) {
  for (; at < columns && at + W <= limit; at += W)
    attention_block<R, W>(weight, wstride, n, m, mstride, scale, out, at, rows);
  if constexpr (W > 1)
    attention_rows<R, W / 2>(weight, wstride, n, m, mstride, scale, out, columns, limit, rows,
                             at);
}

}  // namespace detail
}  // namespace gradsum
