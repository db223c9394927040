// SPDX-License-Identifier: Apache-2.0
// The full training step (gradient pass, aggregation, update) with each
// optimizer, per enabled backend, on logistic regression: samples/s of the
// step, and `update_share`, the part of the step spent beyond one gradient
// pass (the update, line-search evaluations, the Newton solve), measured
// against an evaluate() of the same rows in the same run. Steps continue
// from one iteration to the next, as in training (L-BFGS and Newton then
// work near the optimum, where their line searches may try more points).
//
//   bench_step [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Scalar = double;

template <class Space>
gradsum::Dataset<Scalar, typename Space::memory_space> make_data(std::int64_t n, int d) {
  std::vector<double> x(static_cast<std::size_t>(n) * d), y(static_cast<std::size_t>(n));
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& v : x) v = normal(rng);
  for (auto& v : y) v = double(rng() % 2);
  return gradsum::Dataset<Scalar, typename Space::memory_space>::from_host(n, d, x, y);
}

template <class Space, class Optimizer>
void full_step(benchmark::State& state, Optimizer optimizer) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const auto data = make_data<Space>(n, d);
  auto step = gradsum::make_step<Scalar>(Space(), gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                         optimizer, gradsum::Objective{1e-3});
  auto theta = step.make_parameters();
  step(theta, data);  // checks the data once, warms up
  // One gradient pass at the same rows, best of five: the floor of a step.
  double evaluate_seconds = 1e300;
  for (int r = 0; r < 5; ++r) {
    const auto start = Clock::now();
    step.evaluate(theta, data);  // blocking
    evaluate_seconds =
        std::min(evaluate_seconds, std::chrono::duration<double>(Clock::now() - start).count());
  }
  double total = 0, best = 1e300;
  for (auto _ : state) {
    const auto start = Clock::now();
    const auto result = step(theta, data);  // blocking: fences before it returns
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    benchmark::DoNotOptimize(result.loss);
    state.SetIterationTime(t);
    total += t;
    best = std::min(best, t);
  }
  state.SetItemsProcessed(n * state.iterations());
  state.counters["steps_per_s"] = double(state.iterations()) / total;
  state.counters["evaluate_ms"] = evaluate_seconds * 1e3;
  state.counters["best_step_ms"] = best * 1e3;
  // Best against best: a busy machine delays single steps, not both minima.
  state.counters["update_share"] = std::max(0.0, 1 - evaluate_seconds / best);
}

template <class Space, class Optimizer>
void register_case(const char* name, const Optimizer& optimizer, std::int64_t n, int d) {
  const std::string full =
      std::string("step/") + gradsum::space_name<Space>() + "/double/logistic/" + name;
  benchmark::RegisterBenchmark(full.c_str(), full_step<Space, Optimizer>, optimizer)
      ->Args({n, d})
      ->ArgNames({"n", "d"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.2);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    const std::int64_t n = 100000;
    const int d = 32;  // P = 33: small enough for Newton
    register_case<Space>("sgd", gradsum::SGD{0.1}, n, d);
    register_case<Space>("momentum", gradsum::Momentum{}, n, d);
    register_case<Space>("adam", gradsum::Adam{}, n, d);
    register_case<Space>("lbfgs", gradsum::LBFGS{}, n, d);
    register_case<Space>("steepest_armijo", gradsum::SteepestDescent{}, n, d);
    register_case<Space>("newton", gradsum::Newton{}, n, d);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
