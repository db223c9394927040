// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How gemm() calls the host BLAS itself (Kokkos Kernels' HostBlas, when
/// Kokkos Kernels has the BLAS as a third-party library): every product on
/// a host space in float or double, as one call (blas_one_call) or in the
/// two ways below where one call is slow:
///
/// **Slices.** On OpenMP, a large product cut into slices of C's rows, one
/// per thread, each slice a single-threaded BLAS call. Measured with
/// OpenBLAS 0.3.21 on two cores, for the products of the GPT of
/// docs/layers.md (2048 rows, inner sizes 63 to 2048): 187-197 GFLOP/s
/// against 135-165 when OpenBLAS shares one call between its own two
/// threads (its single-threaded rate is 90-100), because each thread then
/// packs and computes its own rows without waiting for the other. A BLAS
/// built on OpenMP runs alone inside a parallel region; OpenBLAS built on
/// pthreads does not, and is left to its own threads. Where C has few
/// rows and more columns (a weight's gradient, delta^T X, out x in), the
/// slices are of columns instead where that gives the largest slice a
/// clearly smaller share of C (blas_slicing): 128 rows cut at a multiple of 48 are
/// slices of 48 and 80 rows, one thread then waiting a quarter of the
/// time, and 63 rows are one slice. On two cores, the GPT's 128 x 512
/// (K = 2048) weight gradient took 1.38 ms in two slices of columns
/// against 1.76 in two of rows, and its 63 x 128 one 0.22 against 0.37.
///
/// The bits: a slice of C's rows or columns is what the BLAS computes for
/// them in one call when the slice starts at a multiple of its kernels'
/// blocks, for OpenBLAS's AVX2 kernels (every shape measured) and for the
/// shapes above on AVX-512, not always for its AVX-512 ones (whose
/// small-matrix kernels pick by shape). Slices start at multiples of 48
/// rows or columns. A BLAS's bits change anyway with the number of threads
/// it uses itself, so no product promises bits across thread counts;
/// gradsum's own kernels do.
///
/// **A row times a matrix** (M = 1: the column sums of a bias's gradient,
/// ones^T delta) on any host space, as the matrix-vector product it is:
/// OpenBLAS's gemm packs the whole matrix for it, its gemv streams it once
/// (2048 x 512 floats: 56 us against 179, two threads).

#include <gradsum/config.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#if GRADSUM_ENABLE_KOKKOS_KERNELS
#include <KokkosKernels_config.h>
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#include <KokkosBlas_Host_tpl.hpp>
#define GRADSUM_HOST_BLAS 1
#if defined(KOKKOS_ENABLE_OPENMP)
#define GRADSUM_BLAS_ROW_SLICES 1
#endif
#endif
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#if defined(GRADSUM_BLAS_ROW_SLICES) && defined(__GNUC__)
// OpenBLAS names its threading (0 sequential, 1 pthreads, 2 OpenMP); weak,
// so that another BLAS leaves it null.
extern "C" int openblas_get_parallel(void) __attribute__((weak));
#endif

namespace gradsum {
namespace detail {

/// Slices start at multiples of this many rows (a multiple of the BLAS
/// kernels' blocks of 4, 8, 12, 16 and 24 rows).
constexpr std::int64_t blas_slice_rows = 48;

/// Products of fewer multiply-adds stay one call (a parallel region costs a
/// few microseconds; 2^20 multiply-adds take about 20 on one core).
constexpr std::int64_t blas_slice_min_work = std::int64_t(1) << 20;

/// The first row of slice s of `slices` over M rows: M s / slices rounded
/// to the nearest multiple of blas_slice_rows (M for s = slices). With
/// slices <= M / blas_slice_rows the starts strictly increase. Columns
/// are cut the same way.
inline std::int64_t blas_slice_start(std::int64_t s, std::int64_t slices, std::int64_t M) {
  if (s >= slices) return M;
  const std::int64_t unit = blas_slice_rows * slices;
  return (M * s + unit / 2) / unit * blas_slice_rows;
}

/// How a product is cut across `threads`: into `slices` of C's rows or of
/// its columns (slices < 2: not at all).
struct BlasSlicing {
  std::int64_t slices = 0;
  bool columns = false;
};

/// The largest of `slices` slices of n rows (blas_slice_start), n if fewer
/// than two.
inline std::int64_t blas_largest_slice(std::int64_t slices, std::int64_t n) {
  if (slices < 2) return n;
  std::int64_t largest = 0;
  for (std::int64_t s = 0; s < slices; ++s)
    largest = std::max(largest, blas_slice_start(s + 1, slices, n) - blas_slice_start(s, slices, n));
  return largest;
}

/// Columns are cut only where their largest slice's share of C is less
/// than this fraction of the rows' largest share. A slice of columns makes
/// each thread pack all of op(A), a slice of rows all of op(B): the GPT's
/// 2048 x 384 (K = 128) product, shares 0.508 in rows and 0.5 in columns,
/// took 1.00 ms in rows and 1.32 in columns (two cores, best of 200).
constexpr double blas_columns_gain = 0.9;

/// Rows or columns of an M x N product for `threads` threads: columns
/// where they leave the largest slice a share of C clearly smaller
/// (blas_columns_gain) than rows do, else rows; at most `threads` slices
/// of at least blas_slice_rows each.
inline BlasSlicing blas_slicing(std::int64_t threads, std::int64_t M, std::int64_t N) {
  const std::int64_t by_rows = std::min(threads, M / blas_slice_rows);
  const std::int64_t by_columns = std::min(threads, N / blas_slice_rows);
  // The largest slice's share of C: largest / M for rows, against / N.
  const double rows_share = double(blas_largest_slice(by_rows, M)) / double(M);
  const double columns_share = double(blas_largest_slice(by_columns, N)) / double(N);
  if (by_columns >= 2 && columns_share < blas_columns_gain * rows_share)
    return {by_columns, true};
  return {by_rows < 2 ? 0 : by_rows, false};
}

/// Whether BLAS calls made inside an OpenMP parallel region run on their
/// calling thread alone: false for OpenBLAS built on pthreads.
inline bool blas_runs_alone_in_parallel_regions() {
#if defined(GRADSUM_BLAS_ROW_SLICES) && defined(__GNUC__)
  if (openblas_get_parallel != nullptr) return openblas_get_parallel() != 1;
#endif
  return true;
}

#if defined(GRADSUM_HOST_BLAS)
/// Rows [r0, r1) and columns [c0, c1) of C = alpha op(A) op(B) + beta C
/// (row-major, every size at most INT_MAX) as one call of the host BLAS:
/// row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so the
/// BLAS's first operand is op(B)'s columns c0..c1 with B's transpose flag,
/// its second op(A)'s rows r0..r1.
template <class Scalar>
void blas_gemm_block(bool ta, bool tb, Scalar alpha, const Scalar* a, std::int64_t lda,
                     const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c, std::int64_t ldc,
                     std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1,
                     std::int64_t K) {
  KokkosBlas::Impl::HostBlas<Scalar>::gemm(
      tb ? 'T' : 'N', ta ? 'T' : 'N', int(c1 - c0), int(r1 - r0), int(K), alpha,
      tb ? b + c0 * ldb : b + c0, int(ldb), ta ? a + r0 : a + r0 * lda, int(lda), beta,
      c + r0 * ldc + c0, int(ldc));
}
#endif

/// C = alpha op(A) op(B) + beta C as slices of C's rows or columns
/// (blas_slicing) on Kokkos::OpenMP, when the space has more than one
/// thread, the product at least blas_slice_min_work multiply-adds and two
/// slices of blas_slice_rows, and the BLAS runs alone in a parallel region.
/// Returns whether it did (false: the caller makes one call). Blocks until
/// the product is done.
template <class ExecutionSpace, class Scalar>
bool blas_slices(const ExecutionSpace& space, bool ta, bool tb, Scalar alpha, const Scalar* a,
                 std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c,
                 std::int64_t ldc, std::int64_t M, std::int64_t N, std::int64_t K) {
#if defined(GRADSUM_BLAS_ROW_SLICES)
  if constexpr (std::is_same<ExecutionSpace, Kokkos::OpenMP>::value &&
                (std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value)) {
    const BlasSlicing cut = blas_slicing(space.concurrency(), M, N);
    const std::int64_t largest = std::max({M, N, K, lda, ldb, ldc});
    if (largest > INT_MAX || cut.slices < 2 ||
        double(M) * double(N) * double(K) < double(blas_slice_min_work) ||
        !blas_runs_alone_in_parallel_regions())
      return false;
    Kokkos::Profiling::pushRegion("gradsum::gemm::blas_slices");
    Kokkos::parallel_for(
        "gradsum::gemm::blas_slices",
        Kokkos::RangePolicy<Kokkos::OpenMP>(space, 0, cut.slices), [=](std::int64_t s) {
          const std::int64_t n = cut.columns ? N : M;
          const std::int64_t from = blas_slice_start(s, cut.slices, n);
          const std::int64_t to = blas_slice_start(s + 1, cut.slices, n);
          if (cut.columns)
            blas_gemm_block(ta, tb, alpha, a, lda, b, ldb, beta, c, ldc, 0, M, from, to, K);
          else
            blas_gemm_block(ta, tb, alpha, a, lda, b, ldb, beta, c, ldc, from, to, 0, N, K);
        });
    space.fence();
    Kokkos::Profiling::popRegion();
    return true;
  }
#endif
  (void)space, (void)ta, (void)tb, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
  (void)beta, (void)c, (void)ldc, (void)M, (void)N, (void)K;
  return false;
}

/// C = alpha op(A) op(B) + beta C as one call of the host BLAS, on host
/// spaces, Scalar float or double: the call Kokkos Kernels makes through
/// its BLAS library, made here so that every version makes it (4.x sends
/// some shapes, a small C with a long inner dimension, to a kernel of its
/// own whose sums depend on the thread count), and so that Serial and
/// OpenMP make the same calls. Returns whether it did (false: the caller
/// calls Kokkos Kernels). Blocks.
template <class ExecutionSpace, class Scalar>
bool blas_one_call(const ExecutionSpace& space, bool ta, bool tb, Scalar alpha, const Scalar* a,
                   std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c,
                   std::int64_t ldc, std::int64_t M, std::int64_t N, std::int64_t K) {
#if defined(GRADSUM_HOST_BLAS)
  if constexpr (Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible &&
                (std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value)) {
    if (std::max({M, N, K, lda, ldb, ldc}) > INT_MAX) return false;
    space.fence();
    Kokkos::Profiling::pushRegion("gradsum::gemm::blas_call");
    blas_gemm_block(ta, tb, alpha, a, lda, b, ldb, beta, c, ldc, 0, M, 0, N, K);
    Kokkos::Profiling::popRegion();
    return true;
  }
#endif
  (void)space, (void)ta, (void)tb, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
  (void)beta, (void)c, (void)ldc, (void)M, (void)N, (void)K;
  return false;
}

/// C = alpha a op(B) + beta C for a 1 x K row a (op(A) = A, one row) as
/// the BLAS's matrix-vector product, on host spaces, Scalar float or
/// double. Returns whether it did (false: the caller calls gemm). Blocks.
template <class ExecutionSpace, class Scalar>
bool blas_row_vector(const ExecutionSpace& space, bool ta, bool tb, Scalar alpha, const Scalar* a,
                     const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c, std::int64_t M,
                     std::int64_t N, std::int64_t K) {
#if defined(GRADSUM_HOST_BLAS)
  if constexpr (Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible &&
                (std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value)) {
    if (M != 1 || ta || std::max({N, K, ldb}) > INT_MAX) return false;
    // Row-major B (K x N, or N x K under tb) is the column-major matrix
    // B^T: C^T = op(B)^T a^T is B^T a (tb false) or B a (tb true).
    space.fence();
    Kokkos::Profiling::pushRegion("gradsum::gemm::blas_row_vector");
    KokkosBlas::Impl::HostBlas<Scalar>::gemv(tb ? 'T' : 'N', int(tb ? K : N), int(tb ? N : K),
                                             alpha, b, int(ldb), a, 1, beta, c, 1);
    Kokkos::Profiling::popRegion();
    return true;
  }
#endif
  (void)space, (void)ta, (void)tb, (void)alpha, (void)a, (void)b, (void)ldb, (void)beta;
  (void)c, (void)M, (void)N, (void)K;
  return false;
}

}  // namespace detail
}  // namespace gradsum
