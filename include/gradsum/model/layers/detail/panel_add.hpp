// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The one elementwise pass the compositions need: a panel plus another,
/// over the rows x width values that lie one after the other.

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// out[i] = a[i] + b[i] for the n values of row-major panels; `out` may
/// be `a` or `b`. Asynchronous.
template <class Space, class Scalar>
void add_panels(const Space& space, const char* label, const Scalar* a, const Scalar* b,
                Scalar* out, std::int64_t n) {
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) { out[i] = a[i] + b[i]; });
}

}  // namespace detail
}  // namespace gradsum
