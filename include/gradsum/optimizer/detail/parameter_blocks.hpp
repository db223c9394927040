// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Elementwise updates that take a square root (Adam, AdamW, RMSProp,
/// AdaGrad), run over blocks of parameters so that they vectorize on the
/// host. std::sqrt keeps errno's contract (a negative argument sets EDOM)
/// unless the build says -fno-math-errno, so GCC and Clang compile a loop
/// over it as one scalar root at a time with a library call beside it:
/// AdamW took about 20 cycles a parameter. Here each kernel index loads W
/// parameters, their gradient and their state rows into local arrays,
/// updates them there (plain loops over W that the compiler vectorizes:
/// local arrays alias nothing), takes the roots with sqrt_block and stores
/// them back. Each parameter's arithmetic is the one-at-a-time update's,
/// operation for operation, and vector roots are correctly rounded like
/// std::sqrt, so the bits do not change. On a device W is 1: one
/// parameter a thread, as before.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/simd.hpp>

#include <type_traits>

#if defined(GRADSUM_SIMD_SQRT)
#include <immintrin.h>
#endif

namespace gradsum {
namespace detail {

#if defined(GRADSUM_SIMD_SQRT)
/// Values of one vector register of the widest kind the build targets
/// (AVX-512, AVX, else SSE2).
template <class Scalar>
inline constexpr int sqrt_lanes =
#if defined(__AVX512F__)
    64 / int(sizeof(Scalar));
#elif defined(__AVX__)
    32 / int(sizeof(Scalar));
#else
    16 / int(sizeof(Scalar));
#endif

/// x[0 .. sqrt_lanes) = their square roots, in one vector register.
inline void sqrt_register(float* x) {
#if defined(__AVX512F__)
  _mm512_storeu_ps(x, _mm512_sqrt_ps(_mm512_loadu_ps(x)));
#elif defined(__AVX__)
  _mm256_storeu_ps(x, _mm256_sqrt_ps(_mm256_loadu_ps(x)));
#else
  _mm_storeu_ps(x, _mm_sqrt_ps(_mm_loadu_ps(x)));
#endif
}
inline void sqrt_register(double* x) {
#if defined(__AVX512F__)
  _mm512_storeu_pd(x, _mm512_sqrt_pd(_mm512_loadu_pd(x)));
#elif defined(__AVX__)
  _mm256_storeu_pd(x, _mm256_sqrt_pd(_mm256_loadu_pd(x)));
#else
  _mm_storeu_pd(x, _mm_sqrt_pd(_mm_loadu_pd(x)));
#endif
}
#endif

/// x[i] = sqrt(x[i]) for i < W: vector registers on x86-64 hosts
/// (GRADSUM_SIMD_SQRT) where W fills them, math::sqrt one value at a time
/// elsewhere. Both round each root correctly.
template <int W, class Scalar>
KOKKOS_FORCEINLINE_FUNCTION void sqrt_block(Scalar (&x)[W]) {
#if defined(GRADSUM_SIMD_SQRT)
  if constexpr ((std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>) &&
                W % sqrt_lanes<Scalar> == 0) {
    for (int i = 0; i < W; i += sqrt_lanes<Scalar>) sqrt_register(x + i);
    return;
  }
#endif
  for (int i = 0; i < W; ++i) x[i] = math::sqrt(x[i]);
}

/// W parameters, their gradient and Rows state values each, in local
/// arrays. Past the last parameter (the last block of a kernel) the
/// arrays hold zeros, which every update here maps to finite values that
/// are never stored.
template <class Scalar, int Rows, int W>
struct ParameterBlock {
  Scalar theta[W], g[W], state[Rows][W];
};

/// The block width on Space: 16 on the host, 1 on a device.
template <class Space>
inline constexpr int parameter_block_width =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible ? 16
                                                                                             : 1;

/// Loads the block of `count` <= W parameters from `first`, applies f to
/// it, stores it back.
template <int Rows, int W, class Theta, class Gradient, class State, class F>
KOKKOS_FORCEINLINE_FUNCTION void update_parameter_block(int first, int count,
                                                        const Theta& theta, const Gradient& g,
                                                        const State& s, const F& f) {
  using Scalar = typename Theta::non_const_value_type;
  ParameterBlock<Scalar, Rows, W> b;
  for (int i = 0; i < W; ++i) {
    b.theta[i] = i < count ? theta(first + i) : Scalar(0);
    b.g[i] = i < count ? g(first + i) : Scalar(0);
  }
  for (int r = 0; r < Rows; ++r)
    for (int i = 0; i < W; ++i) b.state[r][i] = i < count ? s(r, first + i) : Scalar(0);
  f(b);
  for (int i = 0; i < count; ++i) theta(first + i) = b.theta[i];
  for (int r = 0; r < Rows; ++r)
    for (int i = 0; i < count; ++i) s(r, first + i) = b.state[r][i];
}

/// f(block) for every block of the context's parameters (Rows state rows
/// each), in parallel over blocks; f updates block.theta and block.state
/// in place. Asynchronous.
template <int Rows, class Context, class F>
void update_in_blocks(Context& ctx, const char* label, const F& f) {
  using Space = typename Context::execution_space;
  constexpr int W = parameter_block_width<Space>;
  auto theta = ctx.parameters();
  auto g = ctx.gradient();
  auto s = ctx.state();
  const int n = ctx.num_parameters();
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space>(ctx.space(), 0, (n + W - 1) / W),
      KOKKOS_LAMBDA(int index) {
        const int first = index * W;
        // A whole block with W a constant, so that its loops need no bounds.
        if (n - first >= W)
          update_parameter_block<Rows, W>(first, W, theta, g, s, f);
        else
          update_parameter_block<Rows, W>(first, n - first, theta, g, s, f);
      });
}

}  // namespace detail
}  // namespace gradsum
