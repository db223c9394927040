// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// gemm(space, transa, transb, alpha, A, B, beta, C): the one matrix product
/// gradsum calls, C = alpha op(A) op(B) + beta C on row-major (LayoutRight)
/// Views. With Kokkos Kernels (GRADSUM_ENABLE_KOKKOS_KERNELS in config.hpp)
/// on a host space, when Kokkos Kernels has the BLAS library, it is that
/// BLAS called directly (one call; on OpenMP with several threads, large
/// products as one single-threaded call per thread over a slice of C's
/// rows; a row times a matrix as the BLAS's gemv: linalg/detail/host_blas.hpp);
/// otherwise KokkosBlas::gemm (cuBLAS on Cuda).
/// Without Kokkos Kernels it is gradsum's own kernel (linalg/detail/tiled_gemm.hpp):
/// register-blocked tiles on host spaces, team scratch tiles elsewhere.

#include <gradsum/config.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/linalg/detail/host_blas.hpp>
#include <gradsum/linalg/detail/tiled_gemm.hpp>

#if GRADSUM_ENABLE_KOKKOS_KERNELS
#include <KokkosBlas3_gemm.hpp>
#endif

#include <cstdint>

namespace gradsum {

/// Which implementation gemm() uses: "kokkos-kernels" or "built-in".
inline const char* gemm_implementation() {
#if GRADSUM_ENABLE_KOKKOS_KERNELS
  return "kokkos-kernels";
#else
  return "built-in";
#endif
}

namespace detail {

template <class View>
using rank2_right = std::bool_constant<View::rank == 2 &&
                                       std::is_same<typename View::array_layout,
                                                    Kokkos::LayoutRight>::value>;

/// Whether `t` is 'N' (false) or 'T' (true); anything else is an error.
inline bool transposed(char t, const char* which) {
  if (t == 'N' || t == 'n') return false;
  if (t == 'T' || t == 't') return true;
  fail("gradsum::gemm: ", which, " must be 'N' or 'T', got '", t, "'");
}

}  // namespace detail

/// C = alpha op(A) op(B) + beta C, op(X) = X (transa or transb 'N') or its
/// transpose ('T'): op(A) is M x K, op(B) K x N, C M x N. A, B and C are
/// rank-2 LayoutRight Views (unmanaged ones too) in memory `space` can
/// access. Throws gradsum::Error for mismatched sizes or transposes.
/// Asynchronous on `space`, as far as the implementation allows (Kokkos
/// Kernels before 4.1 takes no execution space: it runs on the default
/// instance, fenced on both sides).
template <class ExecutionSpace, class AView, class BView, class CView>
void gemm(const ExecutionSpace& space, char transa, char transb,
          typename CView::non_const_value_type alpha, const AView& A, const BView& B,
          typename CView::non_const_value_type beta, const CView& C) {
  static_assert(detail::rank2_right<AView>::value && detail::rank2_right<BView>::value &&
                    detail::rank2_right<CView>::value,
                "gradsum::gemm: A, B and C must be rank-2 LayoutRight Views");
  static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename CView::memory_space>::accessible,
                "gradsum::gemm: C's memory space is not accessible from the execution space");
  const bool ta = detail::transposed(transa, "transa"), tb = detail::transposed(transb, "transb");
  const std::int64_t M = std::int64_t(ta ? A.extent(1) : A.extent(0));
  const std::int64_t K = std::int64_t(ta ? A.extent(0) : A.extent(1));
  const std::int64_t KB = std::int64_t(tb ? B.extent(1) : B.extent(0));
  const std::int64_t N = std::int64_t(tb ? B.extent(0) : B.extent(1));
  if (K != KB || std::int64_t(C.extent(0)) != M || std::int64_t(C.extent(1)) != N)
    fail("gradsum::gemm: op(A) is ", M, " x ", K, ", op(B) ", KB, " x ", N, " and C ",
         C.extent(0), " x ", C.extent(1), "; expected M x K, K x N and M x N");
  if (M == 0 || N == 0) return;
#if GRADSUM_ENABLE_KOKKOS_KERNELS
  if (K > 0) {
    const auto lda = std::int64_t(A.stride(0)), ldb = std::int64_t(B.stride(0));
    if (detail::blas_row_vector(space, ta, tb, alpha, A.data(), B.data(), ldb, beta, C.data(), M,
                                N, K) ||
        detail::blas_slices(space, ta, tb, alpha, A.data(), lda, B.data(), ldb, beta, C.data(),
                            std::int64_t(C.stride(0)), M, N, K) ||
        detail::blas_one_call(space, ta, tb, alpha, A.data(), lda, B.data(), ldb, beta, C.data(),
                              std::int64_t(C.stride(0)), M, N, K))
      return;
    const char ta_s[2] = {ta ? 'T' : 'N', '\0'}, tb_s[2] = {tb ? 'T' : 'N', '\0'};
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
    KokkosBlas::gemm(space, ta_s, tb_s, alpha, A, B, beta, C);
#else
    space.fence();
    KokkosBlas::gemm(ta_s, tb_s, alpha, A, B, beta, C);
    Kokkos::fence();
#endif
    return;
  }
#endif
  detail::tiled_gemm(space, ta, tb, alpha, A, B, beta, C, M, N, K);
}

}  // namespace gradsum
