// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>

#include <cstddef>

namespace gradsum {
namespace detail {

/// Asks for the cache lines of p[0 … bytes), 64 bytes apart, to be brought
/// into the core's caches ahead of use: into level 1 with Locality 3, level
/// 2 with Locality 2 (__builtin_prefetch's scale). A hint only: it never
/// faults, and without GRADSUM_SIMD_PREFETCH it does nothing.
template <int Locality>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_lines(const void* p, std::size_t bytes) {
#ifdef GRADSUM_SIMD_PREFETCH
  for (std::size_t o = 0; o < bytes; o += 64)
    __builtin_prefetch(static_cast<const char*>(p) + o, 0, Locality);
#else
  (void)p;
  (void)bytes;
#endif
}

/// A model's batched path calls ahead(s) once for each sample s of its
/// block, as it starts on it, so that the caller can spread its requests
/// for a later block's rows over the block's work (see BlockBody in
/// gradient/analytic.hpp). This one asks for nothing.
struct NoPrefetch {
  KOKKOS_FORCEINLINE_FUNCTION void operator()(int /*s*/) const {}
};

}  // namespace detail
}  // namespace gradsum
