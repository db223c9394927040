// SPDX-License-Identifier: Apache-2.0
// What reading features in place costs when their rows are not contiguous:
// the training step (gradient pass + SGD) and predict, per enabled backend,
// on the same numbers held row-major (LayoutRight: the reference),
// column-major (LayoutLeft) and as every other column of a row-major table
// (LayoutStride, column stride 2), timed in turn in the same iterations.
// Counters: each layout's ms, and left_ratio / strided_ratio, its time over
// LayoutRight's (1 = free). Models: Linear (LayoutRight takes its block
// path on host spaces, the others the per-sample path with a row gather)
// and an MLP on the layer-wise path (a gathered panel).
//
//   bench_layout [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

namespace {

using Scalar = double;

// The numbers of `row_major` in the two other layouts, as Datasets.
template <class Data>
struct Layouts {
  using Memory = typename Data::memory_space;
  Data right;
  gradsum::Dataset<Scalar, Memory, Kokkos::LayoutLeft> left;
  gradsum::Dataset<Scalar, Memory, Kokkos::LayoutStride> strided;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> wide;  // holds the strided columns

  explicit Layouts(const Data& row_major) : right(row_major) {
    const auto x = row_major.features();
    const std::int64_t n = x.extent(0), d = x.extent(1);
    Kokkos::View<Scalar**, Kokkos::LayoutLeft, Memory> columns("gradsum::bench::left", n, d);
    Kokkos::deep_copy(columns, x);
    left = decltype(left)(columns, row_major.targets());
    wide = decltype(wide)("gradsum::bench::wide", n, 2 * d);
    auto host = Kokkos::create_mirror_view(wide);
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < d; ++j) host(i, 2 * j + 1) = hx(i, j);
    Kokkos::deep_copy(wide, host);
    const Kokkos::View<Scalar**, Kokkos::LayoutStride, Memory> every_other(
        wide.data() + 1, Kokkos::LayoutStride(n, 2 * d, d, 2));
    strided = decltype(strided)(every_other, row_major.targets());
  }
};

// Times `run(data)` on the three layouts in turn per iteration, and
// reports each one's mean and its ratio to LayoutRight's; with
// `per_sample`, also LayoutRight on the per-sample path the other layouts
// take (`per_sample(data)`), and LayoutLeft's ratio to that.
template <class Space, class Data, class Run, class PerSample = std::nullptr_t>
void time_layouts(benchmark::State& state, const Space& space, const Layouts<Data>& l,
                  const Run& run, const PerSample& per_sample = nullptr) {
  constexpr bool compare = !std::is_same<PerSample, std::nullptr_t>::value;
  run(l.right);  // warms up, checks the data once
  run(l.left);
  run(l.strided);
  double right = 0, left = 0, strided = 0, right_per_sample = 0;
  for (auto _ : state) {
    const double t = gradsum_bench::seconds_of(space, [&] { run(l.right); });
    left += gradsum_bench::seconds_of(space, [&] { run(l.left); });
    strided += gradsum_bench::seconds_of(space, [&] { run(l.strided); });
    if constexpr (compare)
      right_per_sample += gradsum_bench::seconds_of(space, [&] { per_sample(l.right); });
    right += t;
    state.SetIterationTime(t);
  }
  const double runs = double(state.iterations());
  if constexpr (compare) {
    state.counters["right_per_sample_ms"] = right_per_sample / runs * 1e3;
    state.counters["left_ratio_to_per_sample"] = left / right_per_sample;
  }
  state.counters["right_ms"] = right / runs * 1e3;
  state.counters["left_ms"] = left / runs * 1e3;
  state.counters["strided_ms"] = strided / runs * 1e3;
  state.counters["left_ratio"] = left / right;
  state.counters["strided_ratio"] = strided / right;
  state.SetItemsProcessed(l.right.num_samples() * state.iterations());
}

// The model of a case: Linear(d) for regression, or d-64-64-1 tanh.
gradsum::MLP case_mlp(int d) { return gradsum::MLP(d, {64, 64}, 1, gradsum::Activation::tanh); }

template <class Space>
void layout_step(benchmark::State& state, bool mlp) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const Space space;
  const Layouts<gradsum::Dataset<Scalar, typename Space::memory_space>> l(
      gradsum_bench::random_dataset<Space, Scalar>(n, d, 0, 5));
  auto make = [&](const auto& model) {
    return gradsum::make_step<Scalar>(space, model, gradsum::SquaredError{}, gradsum::SGD{1e-3});
  };
  if (mlp) {
    const auto net = case_mlp(d);
    auto step = make(net);
    auto theta = step.make_parameters();
    gradsum::initialize(net, gradsum::Initializer::glorot_uniform(), theta);
    time_layouts(state, space, l, [&](const auto& data) { step(theta, data); });
  } else {
    // On host spaces LayoutRight takes the block path; so the per-sample
    // path on LayoutRight too, which the other layouts take.
    gradsum::Linear per_sample_model(d);
    per_sample_model.batched = false;
    auto step = make(gradsum::Linear(d));
    auto per_sample = make(per_sample_model);
    auto theta = step.make_parameters();
    time_layouts(
        state, space, l, [&](const auto& data) { step(theta, data); },
        [&](const auto& data) { per_sample(theta, data); });
  }
}

template <class Space>
void layout_predict(benchmark::State& state, bool mlp) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const Space space;
  const Layouts<gradsum::Dataset<Scalar, typename Space::memory_space>> l(
      gradsum_bench::random_dataset<Space, Scalar>(n, d, 0, 6));
  Kokkos::View<Scalar**, typename Space::memory_space> out("gradsum::bench::out", n, 1);
  auto go = [&](auto model) {
    Kokkos::View<Scalar*, typename Space::memory_space> theta("gradsum::bench::theta",
                                                              model.num_parameters());
    Kokkos::deep_copy(theta, Scalar(0.01));
    time_layouts(state, space, l, [&](const auto& data) {
      gradsum::predict(space, model, theta, data.features(), out);
    });
  };
  if (mlp) go(case_mlp(d));
  else go(gradsum::Linear(d));
}

template <class Space>
void register_case(const char* what, void (*f)(benchmark::State&, bool), bool mlp,
                   std::int64_t n, int d) {
  const std::string name = std::string(what) + "/" + gradsum::space_name<Space>() +
                           "/double/" + (mlp ? "mlp" : "linear");
  benchmark::RegisterBenchmark(name.c_str(), f, mlp)
      ->Args({n, d})
      ->ArgNames({"n", "d"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    register_case<Space>("layout_step", layout_step<Space>, false, 200000, 32);
    register_case<Space>("layout_step", layout_step<Space>, true, 20000, 32);
    register_case<Space>("layout_predict", layout_predict<Space>, false, 200000, 32);
    register_case<Space>("layout_predict", layout_predict<Space>, true, 20000, 32);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
