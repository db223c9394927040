// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// gradsum's own matrix product, for builds without Kokkos Kernels:
/// C = alpha op(A) op(B) + beta C on row-major Views. On host spaces,
/// register-blocked micro-tiles of MR x NR over panels of op(B) packed on
/// the stack; elsewhere (GPUs), team tiles staged in scratch memory.
/// Neither allocates. As in BLAS, C is not read when beta is 0. Its
/// multiply-adds are fused where the target has them (it serves Sum's
/// layer-wise path, which promises no bits across builds).

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/multiply_add.hpp>
#include <gradsum/core/simd.hpp>

#include <cstdint>
#include <type_traits>

namespace gradsum {
namespace detail {

/// The operands of one product: raw row-major pointers and strides.
template <class Scalar>
struct GemmOperands {
  const Scalar* a;
  const Scalar* b;
  Scalar* c;
  std::int64_t lda, ldb, ldc;
  std::int64_t M, N, K;
  Scalar alpha, beta;
};

/// The host kernel: one work item is an NR-wide column of C over a block
/// of row tiles; for each chunk of KC values of k it packs op(B)'s KC x NR
/// panel (zero past N) and runs the MR x NR micro-tile over it.
template <class Scalar, bool TA, bool TB>
struct HostGemm {
  // A micro-tile of MR rows of NV vectors of W bytes (the target's own
  // width): 8 x 1 with AVX-512, 6 x 2 with AVX, 6 x 2 of 16 bytes
  // otherwise; the accumulators take half of the vector registers or more.
#if defined(__AVX512F__)
  static constexpr int W = 64, NV = 1, MR = 8;
#elif defined(__AVX__)
  static constexpr int W = 32, NV = 2, MR = 6;
#else
  static constexpr int W = 16, NV = 2, MR = 6;
#endif
  static constexpr int NR = NV * W / int(sizeof(Scalar));  // columns of C per tile
  static constexpr int KC = 256;
  GemmOperands<Scalar> g;
  std::int64_t column_tiles;
  std::int64_t row_tiles;  // MR-row tiles per work item

  /// Row tiles per work item: up to 32 (the panel of op(B) serves them
  /// all), fewer where that would leave fewer than 4 items per thread.
  static std::int64_t row_tiles_for(std::int64_t M, std::int64_t columns, int threads) {
    std::int64_t tiles = 32;
    const std::int64_t m_tiles = (M + MR - 1) / MR;
    while (tiles > 1 && columns * ((m_tiles + tiles - 1) / tiles) < 4 * std::int64_t(threads))
      tiles /= 2;
    return tiles;
  }

  KOKKOS_FUNCTION Scalar a_at(std::int64_t i, std::int64_t k) const {
    return TA ? g.a[k * g.lda + i] : g.a[i * g.lda + k];
  }

  KOKKOS_FUNCTION void operator()(std::int64_t item) const {
    const std::int64_t j0 = (item % column_tiles) * NR;
    const std::int64_t i_begin = (item / column_tiles) * MR * row_tiles;
    const std::int64_t i_end = i_begin + MR * row_tiles < g.M ? i_begin + MR * row_tiles : g.M;
    const int nr = g.N - j0 < NR ? int(g.N - j0) : NR;
    alignas(64) Scalar panel[KC * NR];
    for (std::int64_t k0 = 0; k0 < g.K || k0 == 0; k0 += KC) {
      const int kc = g.K - k0 < KC ? int(g.K - k0) : KC;
      pack(panel, k0, kc, j0, nr);
      for (std::int64_t i0 = i_begin; i0 < i_end; i0 += MR) {
        const int mr = i_end - i0 < MR ? int(i_end - i0) : MR;
        if (mr == MR) {
          tile<MR>(panel, i0, k0, kc, j0, nr, MR);
        } else {  // the last rows: 4, 2 and 1 at a time
          int done = 0;
          if (mr - done >= 4) done += tile<4>(panel, i0 + done, k0, kc, j0, nr, 4);
          if (mr - done >= 2) done += tile<2>(panel, i0 + done, k0, kc, j0, nr, 2);
          if (mr - done >= 1) tile<1>(panel, i0 + done, k0, kc, j0, nr, mr - done);
        }
      }
      if (g.K == 0) break;
    }
  }

  // panel[k][j] = op(B)(k0 + k, j0 + j), zero for j >= nr.
  KOKKOS_FUNCTION void pack(Scalar* panel, std::int64_t k0, int kc, std::int64_t j0, int nr) const {
    for (int k = 0; k < kc; ++k) {
      Scalar* row = panel + k * NR;
      for (int j = 0; j < NR; ++j)
        row[j] = j < nr ? (TB ? g.b[(j0 + j) * g.ldb + k0 + k] : g.b[(k0 + k) * g.ldb + j0 + j])
                        : Scalar(0);
    }
  }

  // Rows i0 … i0 + mr - 1 (mr <= R, R rows of accumulators at a time) of
  // the column j0 over the panel's kc values of k; the first chunk applies
  // beta, later ones add.
  template <int R>
  KOKKOS_FUNCTION int tile(const Scalar* panel, std::int64_t i0, std::int64_t k0, int kc,
                           std::int64_t j0, int nr, int mr) const {
    for (int r0 = 0; r0 < mr; r0 += R) {
      Scalar acc[R][NR];
      accumulate<R>(panel, i0 + r0, k0, kc, acc);
      for (int r = 0; r < R; ++r) {
        Scalar* c = g.c + (i0 + r0 + r) * g.ldc + j0;
        if (k0 == 0 && g.beta == Scalar(0))
          for (int j = 0; j < nr; ++j) c[j] = g.alpha * acc[r][j];
        else if (k0 == 0)
          for (int j = 0; j < nr; ++j) c[j] = g.alpha * acc[r][j] + g.beta * c[j];
        else
          for (int j = 0; j < nr; ++j) c[j] += g.alpha * acc[r][j];
      }
    }
    return mr;
  }

  // acc[r][j] = sum over the kc values k of op(A)(i + r, k0 + k) panel[k][j]:
  // R rows of one NR-wide vector each, a broadcast of op(A) per row and k.
  template <int R>
  KOKKOS_FUNCTION void accumulate(const Scalar* panel, std::int64_t i, std::int64_t k0, int kc,
                                  Scalar (&acc)[R][NR]) const {
#ifdef GRADSUM_SIMD_VECTORS
    typedef Scalar V __attribute__((vector_size(W)));
    constexpr int lanes = W / int(sizeof(Scalar));
    V sum[R][NV];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < NV; ++v) sum[r][v] = V{};
    for (int k = 0; k < kc; ++k) {
      V b[NV];
      for (int v = 0; v < NV; ++v) __builtin_memcpy(&b[v], panel + k * NR + v * lanes, sizeof(V));
      for (int r = 0; r < R; ++r) {
        const V a = a_at(i + r, k0 + k) - V{};  // a broadcast (x - 0 is x)
        for (int v = 0; v < NV; ++v) sum[r][v] = multiply_add<true>(a, b[v], sum[r][v]);
      }
    }
    __builtin_memcpy(acc, sum, sizeof sum);
#else
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] = Scalar(0);
    for (int k = 0; k < kc; ++k) {
      const Scalar* b = panel + k * NR;
      for (int r = 0; r < R; ++r) {
        const Scalar a = a_at(i + r, k0 + k);
        for (int j = 0; j < NR; ++j) acc[r][j] = multiply_add<true>(a, b[j], acc[r][j]);
      }
    }
#endif
  }
};

/// The team kernel: one team per T x T tile of C, op(A) and op(B) staged
/// through scratch T x T tiles, the tile of C accumulated in scratch.
template <class Scalar, bool TA, bool TB, class Member>
struct TeamGemm {
  static constexpr int T = 32;
  using Scratch = Kokkos::View<Scalar**, typename Member::execution_space::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  GemmOperands<Scalar> g;
  std::int64_t column_tiles;

  static std::size_t scratch_bytes() { return 3 * Scratch::shmem_size(T, T); }

  KOKKOS_FUNCTION void operator()(const Member& team) const {
    const std::int64_t i0 = (team.league_rank() / column_tiles) * T;
    const std::int64_t j0 = (team.league_rank() % column_tiles) * T;
    Scratch a(team.team_scratch(0), T, T), b(team.team_scratch(0), T, T),
        c(team.team_scratch(0), T, T);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T * T),
                         [&](int e) { c(e / T, e % T) = Scalar(0); });
    for (std::int64_t k0 = 0; k0 < g.K; k0 += T) {
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T * T), [&](int e) {
        const int r = e / T, s = e % T;
        const std::int64_t i = i0 + r, k = k0 + s, kb = k0 + r, j = j0 + s;
        a(r, s) = i < g.M && k < g.K ? (TA ? g.a[k * g.lda + i] : g.a[i * g.lda + k]) : Scalar(0);
        b(r, s) = kb < g.K && j < g.N ? (TB ? g.b[j * g.ldb + kb] : g.b[kb * g.ldb + j])
                                      : Scalar(0);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T * T), [&](int e) {
        const int r = e / T, s = e % T;
        Scalar sum = 0;
        for (int k = 0; k < T; ++k) sum = multiply_add<true>(a(r, k), b(k, s), sum);
        c(r, s) += sum;
      });
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T * T), [&](int e) {
      const int r = e / T, s = e % T;
      const std::int64_t i = i0 + r, j = j0 + s;
      if (i < g.M && j < g.N) {
        Scalar& out = g.c[i * g.ldc + j];
        out = g.beta == Scalar(0) ? g.alpha * c(r, s) : g.alpha * c(r, s) + g.beta * out;
      }
    });
  }
};

/// The host kernel on host spaces (force_team: the team kernel anywhere,
/// for tests), the team kernel elsewhere. Asynchronous.
template <bool TA, bool TB, class ExecutionSpace, class Scalar>
void tiled_gemm_as(const ExecutionSpace& space, const GemmOperands<Scalar>& g, bool force_team) {
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible;
  if constexpr (host) {
    if (!force_team) {
      using Kernel = HostGemm<Scalar, TA, TB>;
      const std::int64_t columns = (g.N + Kernel::NR - 1) / Kernel::NR;
      const std::int64_t tiles = Kernel::row_tiles_for(g.M, columns, space.concurrency());
      const std::int64_t rows = (g.M + Kernel::MR * tiles - 1) / (Kernel::MR * tiles);
      Kokkos::parallel_for("gradsum::linalg::gemm",
                           Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                               space, 0, columns * rows),
                           Kernel{g, columns, tiles});
      return;
    }
  }
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Kernel = TeamGemm<Scalar, TA, TB, typename Policy::member_type>;
  const std::int64_t columns = (g.N + Kernel::T - 1) / Kernel::T;
  const std::int64_t rows = (g.M + Kernel::T - 1) / Kernel::T;
  Kokkos::parallel_for("gradsum::linalg::gemm_team",
                       Policy(space, int(columns * rows), Kokkos::AUTO)
                           .set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
                       Kernel{g, columns});
}

/// tiled_gemm for Views (sizes checked by gemm()). Asynchronous.
template <class ExecutionSpace, class AView, class BView, class CView>
void tiled_gemm(const ExecutionSpace& space, bool ta, bool tb,
                typename CView::non_const_value_type alpha, const AView& A, const BView& B,
                typename CView::non_const_value_type beta, const CView& C, std::int64_t M,
                std::int64_t N, std::int64_t K, bool force_team = false) {
  using Scalar = typename CView::non_const_value_type;
  const GemmOperands<Scalar> g{A.data(), B.data(), C.data(), std::int64_t(A.stride(0)),
                               std::int64_t(B.stride(0)), std::int64_t(C.stride(0)),
                               M, N, K, alpha, beta};
  if (!ta && !tb) tiled_gemm_as<false, false>(space, g, force_team);
  else if (ta && !tb) tiled_gemm_as<true, false>(space, g, force_team);
  else if (!ta && tb) tiled_gemm_as<false, true>(space, g, force_team);
  else tiled_gemm_as<true, true>(space, g, force_team);
}

}  // namespace detail
}  // namespace gradsum
