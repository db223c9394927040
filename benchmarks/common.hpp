// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every benchmark binary's main does: start Kokkos, register the
// benchmarks (for every enabled backend), run Google Benchmark, finalize.

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

namespace gradsum_bench {

/// Runs the benchmarks that `register_all()` registers, after Kokkos has
/// started (registration may allocate Views) and before it finalizes.
template <class Register>
int run(int argc, char** argv, const Register& register_all) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace gradsum_bench
