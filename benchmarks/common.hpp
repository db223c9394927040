// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every benchmark binary's main does: start Kokkos, register the
// benchmarks (for every enabled backend), record how the binary was
// compiled in the JSON context, run Google Benchmark, finalize.

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gradsum_bench {

using Clock = std::chrono::steady_clock;

/// Seconds that `work()` takes, with `space` fenced before and after.
template <class Space, class Work>
double seconds_of(const Space& space, const Work& work) {
  space.fence();
  const auto start = Clock::now();
  work();
  space.fence();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Uniform on [-sqrt 3, sqrt 3) (mean 0, variance 1), from gradsum's
/// SplitMix64: cheap enough to fill the larger inputs (10^8 values).
inline double random_feature(gradsum::detail::SplitMix64& random) {
  return (double(random.next() >> 11) * 0x1p-52 - 1.0) * 1.7320508075688772;
}

/// n samples of d features (mean 0, variance 1) in Space's memory, with
/// targets: a real value (mean 0, variance 1) when `classes` is 0, else a
/// label in [0, classes).
template <class Space, class Scalar>
gradsum::Dataset<Scalar, typename Space::memory_space> random_dataset(std::int64_t n, int d,
                                                                      int classes,
                                                                      std::uint64_t seed) {
  using Data = gradsum::Dataset<Scalar, typename Space::memory_space>;
  typename Data::features_view x(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::bench::x"), n, d);
  typename Data::targets_view y(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::bench::y"), n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hy = Kokkos::create_mirror_view(y);
  gradsum::detail::SplitMix64 random(seed);
  for (std::int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < d; ++j) hx(i, j) = Scalar(random_feature(random));
    hy(i) = classes == 0 ? Scalar(random_feature(random)) : Scalar(random.below(classes));
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(y, hy);
  return Data(x, y);
}

/// The widest x86 SIMD the compiler targeted for this binary.
inline const char* simd_name() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE2__)
  return "sse2";
#else
  return "none";
#endif
}

/// The kernel set OpenBLAS runs ("Haswell", "Cooperlake", ...: what
/// OPENBLAS_CORETYPE names, else what OpenBLAS detected), or "not OpenBLAS"
/// where the BLAS linked is another or none. The products' speed depends
/// on it more than on anything gradsum chooses.
extern "C" char* openblas_get_corename(void) __attribute__((weak));
inline std::string blas_core() {
  if (openblas_get_corename == nullptr) return "not OpenBLAS";
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

/// Reports nothing: ranks other than 0 run the same benchmarks silently.
class Quiet : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

/// Runs the benchmarks that `register_all()` registers, after MPI (in a
/// build with it) and Kokkos have started (registration may allocate
/// Views) and before they finalize. Under mpiexec every rank runs every
/// benchmark and rank 0 alone reports and writes --benchmark_out (Google
/// Benchmark truncates the file on every process that is given it).
template <class Register>
int run(int argc, char** argv, const Register& register_all) {
  gradsum::Environment environment(argc, argv);
  register_all();
#ifdef GRADSUM_BENCH_NATIVE
  benchmark::AddCustomContext("gradsum_native", "on");
#else
  benchmark::AddCustomContext("gradsum_native", "off");
#endif
  benchmark::AddCustomContext("gradsum_simd", simd_name());
  benchmark::AddCustomContext("gradsum_gemm", GRADSUM_GEMM);
  benchmark::AddCustomContext("blas_core", blas_core());
  std::vector<char*> args(argv, argv + argc);
  if (environment.rank() != 0)
    args.erase(std::remove_if(args.begin() + 1, args.end(),
                              [](const char* a) {
                                return std::string(a).rfind("--benchmark_out", 0) == 0;
                              }),
               args.end());
  int count = int(args.size());
  benchmark::Initialize(&count, args.data());
  if (environment.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Quiet quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace gradsum_bench
