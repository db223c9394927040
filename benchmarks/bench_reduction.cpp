// SPDX-License-Identifier: Apache-2.0
// The in-process reductions on the same gradient pass, per enabled backend:
// one evaluate() of a logistic model (Linear + BinaryCrossEntropy) whose
// per-sample contributions are summed by Sum, Compensated or Reproducible.
// Each Compensated and Reproducible case also times Sum on the same data in
// the same run and reports `ratio_to_sum` = its time / Sum's time (best of
// the measured iterations each; the target for Reproducible is at
// most 2 for d >= 64, n >= 1e6), and `cpu_ratio_to_sum`, the same with the
// process's CPU time (std::clock), which other jobs on a shared machine
// disturb less than the wall-clock time.
//
//   bench_reduction [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace {

using gradsum_bench::Clock;

// A warmed-up step over `data` with `Reduction`, as a callable that times
// one evaluate() (fenced before and after): {wall-clock, CPU} seconds.
template <class Space, class Scalar, class Reduction, class Data>
auto timed_evaluation(const Data& data, int d) {
  const Space space;
  auto step = gradsum::make_step<Scalar>(space, gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                         gradsum::SGD{}, gradsum::Objective{},
                                         gradsum::Analytic{}, Reduction{});
  auto theta = step.make_parameters();
  Kokkos::deep_copy(theta, Scalar(0.01));
  step.evaluate(theta, data);  // checks the data once, warms up
  return [space, step, theta, data]() mutable {
    space.fence();
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    step.evaluate(theta, data);
    space.fence();
    const double cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    return std::make_pair(std::chrono::duration<double>(Clock::now() - start).count(), cpu);
  };
}

template <class Space, class Scalar, class Reduction>
void reduction_pass(benchmark::State& state) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const auto data = gradsum_bench::random_dataset<Space, Scalar>(n, d, 2, 7);
  double best = 1e300, best_cpu = 1e300;
  {
    auto evaluate = timed_evaluation<Space, Scalar, Reduction>(data, d);
    for (auto _ : state) {
      const auto [t, cpu] = evaluate();
      state.SetIterationTime(t);
      best = std::min(best, t);
      best_cpu = std::min(best_cpu, cpu);
    }
  }
  const double bytes = double(n) * (d + 1) * sizeof(Scalar);
  state.SetBytesProcessed(std::int64_t(bytes) * state.iterations());
  state.SetItemsProcessed(n * state.iterations());
  state.counters["best_ms"] = best * 1e3;
  if (!std::is_same<Reduction, gradsum::Sum>::value) {
    // Sum on the same data in the same run, best of as many repetitions.
    auto evaluate = timed_evaluation<Space, Scalar, gradsum::Sum>(data, d);
    double sum_best = 1e300, sum_best_cpu = 1e300;
    const auto repetitions = std::max<benchmark::IterationCount>(3, state.iterations());
    for (benchmark::IterationCount r = 0; r < repetitions; ++r) {
      const auto [t, cpu] = evaluate();
      sum_best = std::min(sum_best, t);
      sum_best_cpu = std::min(sum_best_cpu, cpu);
    }
    state.counters["sum_best_ms"] = sum_best * 1e3;
    state.counters["ratio_to_sum"] = best / sum_best;
    state.counters["cpu_ratio_to_sum"] = best_cpu / sum_best_cpu;
  }
}

template <class Space, class Scalar, class Reduction>
void register_case(std::int64_t n, int d) {
  const std::string name = std::string("reduction/") + gradsum::space_name<Space>() + "/" +
                           (sizeof(Scalar) == 4 ? "float" : "double") + "/" + Reduction::name();
  benchmark::RegisterBenchmark(name.c_str(), reduction_pass<Space, Scalar, Reduction>)
      ->Args({n, d})
      ->ArgNames({"n", "d"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    auto per_scalar = [](auto scalar) {
      using Scalar = decltype(scalar);
      for (int d : {64, 256})
        for (std::int64_t n : {100000, 1000000}) {
          register_case<Space, Scalar, gradsum::Sum>(n, d);
          register_case<Space, Scalar, gradsum::Compensated>(n, d);
          register_case<Space, Scalar, gradsum::Reproducible>(n, d);
        }
    };
    per_scalar(float{});
    per_scalar(double{});
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
