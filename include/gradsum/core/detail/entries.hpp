// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The shapes of the elementwise kernels of the layer-wise path and of the
/// layers: a function of every entry of a matrix, and the columns of a
/// matrix summed down its rows in a fixed order (no atomics, so a sum has
/// the same bits whatever the thread count).

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// Whether Space runs where host memory is (a row per index and a loop
/// the compiler vectorizes suit it; a GPU wants an index per entry).
template <class Space>
constexpr bool runs_on_host =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;

/// f(r, j) for every entry of an m x n matrix: a row per index, its
/// columns in a loop the compiler vectorizes, on host spaces; an index per
/// entry (MDRange, no division per entry) elsewhere. Asynchronous.
template <class Space, class F>
void for_each_entry(const Space& space, const char* label, std::int64_t m, std::int64_t n,
                    const F& f) {
  if constexpr (runs_on_host<Space>) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, m),
        KOKKOS_LAMBDA(std::int64_t r) {
          for (std::int64_t j = 0; j < n; ++j) f(r, j);
        });
  } else {
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>(
            space, {0, 0}, {m, n}),
        f);
  }
}

/// The sum of f(j) over j < n, in `lanes` partial sums (f(j) into sum
/// j mod lanes) added pairwise at the end: one fixed order, and no chain
/// of dependent adds, so that a loop over a row vectorizes on the host.
template <class Scalar, class F>
KOKKOS_INLINE_FUNCTION Scalar row_sum(std::int64_t n, const F& f) {
  constexpr int lanes = 8;
  Scalar sum[lanes] = {};
  std::int64_t j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int k = 0; k < lanes; ++k) sum[k] += f(j + k);
  for (int k = 0; j + k < n; ++k) sum[k] += f(j + k);
  for (int width = lanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) sum[k] += sum[k + width];
  return sum[0];
}

/// Columns per index of for_each_column_block on host spaces: a cache
/// line of floats, two of doubles, so that threads seldom write one line.
constexpr std::int64_t host_column_block = 16;

/// f(j0, j1) for consecutive blocks [j0, j1) of the n columns, in
/// parallel: f loops over the rows in order and the columns of its block
/// inside, so each column's sum runs in one fixed order. Blocks of
/// host_column_block columns on host spaces (the inner loop vectorizes),
/// one column per index elsewhere (neighbouring threads read neighbouring
/// values of a row). Asynchronous.
template <class Space, class F>
void for_each_column_block(const Space& space, const char* label, std::int64_t n, const F& f) {
  const std::int64_t block = runs_on_host<Space> ? host_column_block : 1;
  Kokkos::parallel_for(
      label,
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                  (n + block - 1) / block),
      KOKKOS_LAMBDA(std::int64_t b) {
        const std::int64_t j0 = b * block;
        f(j0, j0 + block < n ? j0 + block : n);
      });
}

}  // namespace detail
}  // namespace gradsum
