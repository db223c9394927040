// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// One sample's contributions deposited into the floating-point bins: the
/// portable loop, its AVX2 copy, and whether this processor runs the copy.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>
#include <gradsum/reduction/detail/binned.hpp>

#include <cstdint>
#include <cstring>

namespace gradsum {
namespace detail {

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

#ifdef GRADSUM_SIMD_AVX2_COPY
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
#ifdef GRADSUM_SIMD_AVX2_COPY
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  }();
  return yes;
#else
  return false;
#endif
}

}  // namespace detail
}  // namespace gradsum
