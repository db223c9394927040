// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The elementwise kernel shape of the dense paths (the layer-wise
/// gradient, the layers): f(r, j) over the entries of a row-major matrix.

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// f(r, j) for every entry of an m x n matrix: a row per index, its
/// columns in a loop the compiler vectorizes, on host spaces; an index per
/// entry (MDRange, no division per entry) elsewhere. Asynchronous.
template <class Space, class F>
void for_each_entry(const Space& space, const char* label, std::int64_t m, std::int64_t n,
                    const F& f) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Space::memory_space>::accessible) {
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

}  // namespace detail
}  // namespace gradsum
