// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What the host compiler and target offer gradsum's hand-vectorized code,
/// as one family of macros. Each is defined only where its code compiles;
/// where one is not, the code that uses it takes its portable loop, which
/// gives the same bits. Device passes (CUDA, HIP, SYCL) define none.
///
/// - GRADSUM_SIMD_PREFETCH: __builtin_prefetch is available (GCC or Clang,
///   host code; also the host pass of nvcc).
/// - GRADSUM_SIMD_ROW_BYTES: the linear models' dot products hold their
///   partial sums in explicit vector registers of this many bytes (64 with
///   AVX-512, 32 with AVX; GCC 12 or later, or Clang).
/// - GRADSUM_SIMD_AVX2_COPY: x86-64 builds that do not target AVX2 carry
///   copies of the Reproducible deposit compiled for AVX2 (and FMA), run
///   where the processor has them.
/// - GRADSUM_SIMD_VECTORS: GCC/Clang vector extensions in host code
///   (compiled by GCC or Clang itself, not through nvcc), for the built-in
///   gemm's micro-tiles.
/// - GRADSUM_SIMD_LANES: the Reproducible rank-one deposit keeps bins in
///   GCC/Clang vector registers (eight doubles with AVX-512, four with
///   AVX2, or four in the AVX2 copy); GRADSUM_SIMD_LANES_TARGET is the
///   target attribute of that code, and GRADSUM_SIMD_LANES_DISPATCH is
///   defined where it is the AVX2 copy chosen at run time.
/// - GRADSUM_SIMD_SQRT: x86-64 host code compiled by GCC or Clang itself
///   (SSE2 at least): the elementwise optimizers take square roots of
///   blocks of parameters with vector instructions
///   (optimizer/detail/parameter_blocks.hpp).

#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && \
    !defined(__SYCL_DEVICE_ONLY__)
#define GRADSUM_SIMD_PREFETCH 1
#endif

#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__clang__) || __GNUC__ >= 12) && (defined(__AVX__) || defined(__AVX512F__))
#if defined(__AVX512F__)
#define GRADSUM_SIMD_ROW_BYTES 64
#else
#define GRADSUM_SIMD_ROW_BYTES 32
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#define GRADSUM_SIMD_AVX2_COPY 1
#endif

#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    !defined(__SYCL_DEVICE_ONLY__) && !defined(__NVCOMPILER)
#define GRADSUM_SIMD_VECTORS 1
#if defined(__AVX512F__) || defined(__AVX2__)
#define GRADSUM_SIMD_LANES 1
#define GRADSUM_SIMD_LANES_TARGET
#elif defined(GRADSUM_SIMD_AVX2_COPY)
#define GRADSUM_SIMD_LANES 1
#define GRADSUM_SIMD_LANES_DISPATCH 1
#define GRADSUM_SIMD_LANES_TARGET __attribute__((target("avx2,fma")))
#endif
#endif

#if defined(__GNUC__) && defined(__SSE2__) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    !defined(__SYCL_DEVICE_ONLY__) && !defined(__NVCOMPILER)
#define GRADSUM_SIMD_SQRT 1
#endif

#if defined(GRADSUM_SIMD_ROW_BYTES) || defined(GRADSUM_SIMD_LANES)
#include <immintrin.h>
#endif
