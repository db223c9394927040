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
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using Scalar = double;

template <class Space, class Optimizer>
void full_step(benchmark::State& state, Optimizer optimizer) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const auto data = gradsum_bench::random_dataset<Space, Scalar>(n, d, 2, 3);
  const Space space;
  auto step = gradsum::make_step<Scalar>(space, gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                         optimizer, gradsum::Objective{1e-3});
  auto theta = step.make_parameters();
  step(theta, data);  // checks the data once, warms up
  // One gradient pass at the same rows, best of five: the floor of a step.
  double evaluate_seconds = 1e300;
  for (int r = 0; r < 5; ++r) {
    evaluate_seconds = std::min(
        evaluate_seconds, gradsum_bench::seconds_of(space, [&] { step.evaluate(theta, data); }));
  }
  double total = 0, best = 1e300;
  for (auto _ : state) {
    double loss = 0;
    const double t = gradsum_bench::seconds_of(space, [&] { loss = step(theta, data).loss; });
    benchmark::DoNotOptimize(loss);
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
