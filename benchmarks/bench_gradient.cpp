// SPDX-License-Identifier: Apache-2.0
// The gradient pass against the memory bandwidth, per enabled backend:
// one evaluate() of a linear model reads every feature and target once, so
// its floor is bytes(X, y) / bandwidth. The bandwidth is measured in the
// same run by a plain read-reduction over an array of the same size, read
// twice: as it is (`plain_read_bw_GBps`), and asking for the line 4 KiB
// ahead with each line it reads, which reads faster on some machines, as
// the gradient pass itself does. The faster is `read_bw_GBps`, and each benchmark
// reports `bw_fraction` = achieved bytes/s / that bandwidth
// (`plain_bw_fraction`: over the plain read). All are best-of figures
// over as many tries, taken in turn (a pass, the two reads, a pass, ...),
// so that a busy machine, which slows single passes, disturbs no side more
// than another; `mean_GBps` is the achieved rate over all passes. The
// `_shuffled` cases read the rows in a shuffled order, as a mini-batch
// drawn by MiniBatchSampler does (the reference still reads in order).
// Softmax regression takes its layer-wise path (matrix products); its
// per-sample path runs in the same loop: `per_sample_samples_per_s` and
// `layerwise_speedup`.
//
//   bench_gradient [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <string>

namespace {

using gradsum_bench::seconds_of;

// The reference: a sum over an array of a given size, read as 64-bit
// words, eight per item added as a tree into one running sum (separate
// sums in a Kokkos array reduction were slower).
template <class Space>
class ReadReference {
 public:
  ReadReference(const Space& space, std::size_t bytes)
      : space_(space), array_("gradsum::bench::read", bytes / (8 * sizeof(double))) {
    Kokkos::deep_copy(array_, 1.0);
    seconds();  // the first pass touches the pages
  }
  /// Bytes one pass reads.
  double bytes() const { return double(array_.size() * sizeof(double)); }
  /// Seconds of one pass; with Ahead, each item (a line of 64 bytes) asks
  /// for the one prefetch_distance items on.
  template <bool Ahead = false>
  double seconds() const {
    const auto a = array_;
    const std::size_t last = a.extent(0) - 1;
    double sum = 0;
    const double t = seconds_of(space_, [&] {
      Kokkos::parallel_reduce(
          "gradsum::bench::read_reduction", Kokkos::RangePolicy<Space>(space_, 0, a.extent(0)),
          KOKKOS_LAMBDA(std::size_t i, double& acc) {
            // (nvcc: a device lambda may not first capture a variable
            // inside `if constexpr`, so `a` and `last` are read before.)
            const std::size_t later = i + prefetch_distance < last ? i + prefetch_distance : last;
            acc += ((a(i, 0) + a(i, 1)) + (a(i, 2) + a(i, 3))) +
                   ((a(i, 4) + a(i, 5)) + (a(i, 6) + a(i, 7)));
            if constexpr (Ahead) gradsum::detail::prefetch_lines<3>(&a(later, 0), 64);
          },
          sum);
    });
    benchmark::DoNotOptimize(sum);
    return t;
  }

 private:
  /// 4 KiB, the fastest distance tried.
  static constexpr std::size_t prefetch_distance = 64;
  Space space_;
  Kokkos::View<double* [8], Kokkos::LayoutRight, typename Space::memory_space> array_;
};

enum class Kind { linear, logistic, softmax };

template <class Space, class Scalar, Kind kind, bool shuffled>
void gradient_pass(benchmark::State& state) {
  const auto n = std::int64_t(state.range(0));
  const int d = int(state.range(1));
  const int classes = kind == Kind::softmax ? int(state.range(2)) : 2;
  const auto data = gradsum_bench::random_dataset<Space, Scalar>(
      n, d, kind == Kind::linear ? 0 : kind == Kind::softmax ? classes : 2, 7);
  const Space space;
  const double bytes = double(n) * (d + 1) * sizeof(Scalar);
  const ReadReference<Space> reference(space, std::size_t(bytes));
  double total_seconds = 0, best_seconds = 1e300, best_plain_seconds = 1e300,
         best_ahead_seconds = 1e300, layerwise_seconds = 0, one_at_a_time_seconds = 0;
  // Every row once: in order (a RowRange), or as one mini-batch of n rows
  // in a shuffled order (a RowList; the sampler's order outlives it).
  const auto rows = [&] {
    if constexpr (shuffled)
      return gradsum::MiniBatchSampler<typename Space::memory_space>(n, n, 3).batch(0);
    else
      return data.all_rows();
  }();
  auto run = [&](auto model, auto loss) {
    auto step = gradsum::make_step<Scalar>(space, model, loss);
    auto theta = step.make_parameters();
    Kokkos::deep_copy(theta, Scalar(0.01));
    step.evaluate(theta, data, rows);  // checks the data once, warms up
    // Softmax: the step takes the layer-wise or the batched path; the
    // layer-wise and the one-sample-at-a-time paths are timed in turn, in
    // the same state of the machine.
    auto layerwise_model = model, single_model = model;
    if constexpr (kind == Kind::softmax) {
      layerwise_model.batched = false;
      single_model.layerwise = false;
      single_model.batched = false;
      state.SetLabel(step.layerwise() ? "layer-wise path" : "batched path");
    }
    auto layerwise = gradsum::make_step<Scalar>(space, layerwise_model, loss);
    auto single = gradsum::make_step<Scalar>(space, single_model, loss);
    if constexpr (kind == Kind::softmax) {
      layerwise.evaluate(theta, data, rows);
      single.evaluate(theta, data, rows);
    }
    for (auto _ : state) {
      if constexpr (kind == Kind::softmax) {
        layerwise_seconds += seconds_of(space, [&] { layerwise.evaluate(theta, data, rows); });
        one_at_a_time_seconds += seconds_of(space, [&] { single.evaluate(theta, data, rows); });
      }
      const double t = seconds_of(space, [&] { step.evaluate(theta, data, rows); });
      state.SetIterationTime(t);
      total_seconds += t;
      best_seconds = std::min(best_seconds, t);
      // The reference reads after every pass, untimed by the benchmark:
      // every side gets as many tries, in the same state of the machine.
      best_plain_seconds = std::min(best_plain_seconds, reference.seconds());
      best_ahead_seconds = std::min(best_ahead_seconds, reference.template seconds<true>());
    }
  };
  if constexpr (kind == Kind::softmax)
    run(gradsum::Softmax(d, classes), gradsum::SoftmaxCrossEntropy{});
  else if constexpr (kind == Kind::logistic)
    run(gradsum::Linear(d), gradsum::BinaryCrossEntropy{});
  else
    run(gradsum::Linear(d), gradsum::SquaredError{});

  const double bandwidth = reference.bytes() / std::min(best_plain_seconds, best_ahead_seconds);
  state.SetBytesProcessed(std::int64_t(bytes) * state.iterations());
  state.SetItemsProcessed(n * state.iterations());
  const double achieved = bytes / best_seconds;
  state.counters["read_bw_GBps"] = bandwidth / 1e9;
  state.counters["plain_read_bw_GBps"] = reference.bytes() / best_plain_seconds / 1e9;
  state.counters["plain_bw_fraction"] = achieved * best_plain_seconds / reference.bytes();
  state.counters["achieved_GBps"] = achieved / 1e9;
  state.counters["mean_GBps"] = bytes * double(state.iterations()) / total_seconds / 1e9;
  state.counters["bw_fraction"] = achieved / bandwidth;
  if (kind == Kind::softmax) {
    const double samples = double(n) * double(state.iterations());
    state.counters["samples_per_s"] = samples / total_seconds;
    state.counters["layerwise_samples_per_s"] = samples / layerwise_seconds;
    state.counters["one_at_a_time_samples_per_s"] = samples / one_at_a_time_seconds;
    state.counters["speedup_over_one_at_a_time"] = one_at_a_time_seconds / total_seconds;
  }
}

template <class Space, class Scalar, Kind kind, bool shuffled = false>
void register_case(const char* model, std::int64_t n, int d, int classes = 0) {
  const std::string name = std::string("gradient_pass/") + gradsum::space_name<Space>() + "/" +
                           (sizeof(Scalar) == 4 ? "float" : "double") + "/" + model +
                           (shuffled ? "_shuffled" : "");
  benchmark::RegisterBenchmark(name.c_str(), gradient_pass<Space, Scalar, kind, shuffled>)
      ->Args(kind == Kind::softmax ? std::vector<std::int64_t>{n, d, classes}
                                   : std::vector<std::int64_t>{n, d})
      ->ArgNames(kind == Kind::softmax ? std::vector<std::string>{"n", "d", "classes"}
                                       : std::vector<std::string>{"n", "d"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.2);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    for (std::int64_t n : {10000, 1000000, 4000000}) {
      register_case<Space, float, Kind::logistic>("logistic", n, 32);
      register_case<Space, double, Kind::logistic>("logistic", n, 32);
    }
    register_case<Space, float, Kind::logistic>("logistic", 250000, 256);
    register_case<Space, float, Kind::logistic>("logistic", 100000, 1024);
    register_case<Space, double, Kind::linear>("linear", 1000000, 16);
    register_case<Space, float, Kind::linear>("linear", 1000000, 64);
    register_case<Space, double, Kind::softmax>("softmax", 100000, 64, 4);
    register_case<Space, float, Kind::softmax>("softmax", 100000, 64, 10);
    register_case<Space, float, Kind::softmax>("softmax", 20000, 784, 10);
    register_case<Space, float, Kind::logistic, true>("logistic", 1000000, 32);
    register_case<Space, double, Kind::softmax, true>("softmax", 100000, 64, 4);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
