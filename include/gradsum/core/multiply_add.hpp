// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// c + a * b, fused or not by the caller's choice rather than the
/// compiler's. The CMake target gradsum::reproducible (which gradsum's
/// programs and tests link; plain gradsum::gradsum does not) compiles with
/// contraction off (-ffp-contract=off; --fmad=false under nvcc), so that the
/// per-sample arithmetic of the Reproducible reduction rounds the same way
/// on every target (docs/distributed.md, "The same bits on every build"); the
/// Sum paths, which promise no bits, ask for fused multiply-adds here
/// wherever the target has them, which contraction used to give them.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>

#include <cmath>
#include <type_traits>

namespace gradsum {
namespace detail {

/// c + a * b for scalars and for GCC/Clang vectors of float or double.
/// Fused = false: two roundings on every target (the product, then the
/// sum), as long as the compiler does not contract it. Fused = true: one
/// rounding where the target has fused multiply-adds (CUDA and HIP
/// devices; x86-64 with FMA), two elsewhere, never a software fma.
template <bool Fused, class V>
KOKKOS_FORCEINLINE_FUNCTION V multiply_add(V a, V b, V c) {
  if constexpr (Fused) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    if constexpr (std::is_same_v<V, float>) return ::fmaf(a, b, c);
    if constexpr (std::is_same_v<V, double>) return ::fma(a, b, c);
#else
#ifdef __FP_FAST_FMAF
    if constexpr (std::is_same_v<V, float>) return __builtin_fmaf(a, b, c);
#endif
#ifdef __FP_FAST_FMA
    if constexpr (std::is_same_v<V, double>) return __builtin_fma(a, b, c);
#endif
#if defined(GRADSUM_SIMD_ROW_BYTES) || defined(GRADSUM_SIMD_LANES)
    if constexpr (!std::is_arithmetic_v<V>) {
      [[maybe_unused]] constexpr bool single =
          std::is_same_v<std::decay_t<decltype(a[0])>, float>;
#ifdef __FMA__
      if constexpr (sizeof(V) == 32 && single)
        return V(_mm256_fmadd_ps(__m256(a), __m256(b), __m256(c)));
      if constexpr (sizeof(V) == 32 && !single)
        return V(_mm256_fmadd_pd(__m256d(a), __m256d(b), __m256d(c)));
#endif
#ifdef __AVX512F__
      if constexpr (sizeof(V) == 64 && single)
        return V(_mm512_fmadd_ps(__m512(a), __m512(b), __m512(c)));
      if constexpr (sizeof(V) == 64 && !single)
        return V(_mm512_fmadd_pd(__m512d(a), __m512d(b), __m512d(c)));
#endif
    }
#endif
#endif
  }
  return c + a * b;
}

}  // namespace detail
}  // namespace gradsum
