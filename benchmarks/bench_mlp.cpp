// SPDX-License-Identifier: Apache-2.0
// One MLP training step (gradient over a batch + Adam update), per enabled
// backend, on the per-sample path and on the batched path, in samples/s.
// Both paths run in the same benchmark on the same data, so the counter
// `batched_speedup` is a ratio measured in one run.
//
//   bench_mlp [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace {

template <class Space, class Scalar>
void mlp_step(benchmark::State& state, std::vector<int> hidden) {
  const auto n = std::int64_t(state.range(0));
  const int d = 64, classes = 10;
  const auto data = gradsum_bench::random_dataset<Space, Scalar>(n, d, classes, 3);
  const Space space;
  gradsum::MLP net(d, hidden, classes, gradsum::Activation::relu);

  double seconds[2] = {0, 0};
  std::int64_t runs[2] = {0, 0};
  auto make = [&](bool batched) {
    net.batched = batched;
    return gradsum::make_step<Scalar>(space, net, gradsum::SoftmaxCrossEntropy{},
                                      gradsum::Adam{1e-3});
  };
  auto per_sample = make(false);
  auto batched = make(true);
  auto theta = per_sample.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::he_normal(), theta);
  per_sample(theta, data);  // checks the data once, warms up
  batched(theta, data);
  for (auto _ : state) {
    // Alternate the paths so that both see the same machine state.
    for (int path = 0; path < 2; ++path) {
      seconds[path] += gradsum_bench::seconds_of(space, [&] {
        if (path == 0) per_sample(theta, data);
        else batched(theta, data);
      });
      ++runs[path];
    }
    state.SetIterationTime(seconds[1] / double(runs[1]));
  }
  const double per_sample_rate = double(n) * double(runs[0]) / seconds[0];
  const double batched_rate = double(n) * double(runs[1]) / seconds[1];
  state.counters["per_sample_samples_per_s"] = per_sample_rate;
  state.counters["batched_samples_per_s"] = batched_rate;
  state.counters["batched_speedup"] = batched_rate / per_sample_rate;
  state.counters["parameters"] = net.num_parameters();
  state.SetItemsProcessed(n * state.iterations());
}

template <class Space, class Scalar>
void register_case(const std::vector<int>& hidden, std::int64_t n) {
  std::string shape = "64";
  for (int h : hidden) {  // appends: see MLP::describe()
    shape += '-';
    shape += std::to_string(h);
  }
  shape += "-10";
  const std::string name = std::string("mlp_step/") + gradsum::space_name<Space>() + "/" +
                           (sizeof(Scalar) == 4 ? "float" : "double") + "/" + shape;
  benchmark::RegisterBenchmark(name.c_str(), [hidden](benchmark::State& state) {
    mlp_step<Space, Scalar>(state, hidden);
  })
      ->Arg(n)
      ->ArgNames({"batch"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    register_case<Space, double>({32}, 8192);
    register_case<Space, float>({32}, 8192);
    register_case<Space, double>({128, 64}, 8192);
    register_case<Space, float>({128, 64}, 8192);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
