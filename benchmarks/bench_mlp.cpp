// SPDX-License-Identifier: Apache-2.0
// One MLP training step (gradient over a batch + SGD), softmax
// cross-entropy, per enabled backend, on the layer-wise path (matrix
// products through gradsum::gemm), with in the same run:
//   - gemm_fraction: the step's matrix products alone, the same calls on
//     panels of the same shapes through the same gemm, over the step time
//     (at most 1 when the step is nothing but its products);
//   - per_sample_ms and layerwise_speedup, for networks the per-sample
//     path takes;
//   - GFLOP/s: 6 B sum(n_in n_out) per step (2 forward, 4 backward).
// Under mpiexec (a build with MPI) the global batch is split over the ranks
// and aggregated by Allreduce: times are the maximum over ranks.
//
//   bench_mlp [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]
//   mpiexec -n 2 bench_mlp --benchmark_filter=64-256-10

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace {

#if GRADSUM_ENABLE_MPI
using Aggregation = gradsum::Allreduce;
Aggregation make_aggregation() { return Aggregation(MPI_COMM_WORLD); }
#else
using Aggregation = gradsum::Local;
Aggregation make_aggregation() { return Aggregation{}; }
#endif

// The step's products (gradient/detail/layerwise.hpp) on panels of m rows:
// per layer Z = A W forward, then dW += A^T D, db += 1^T D and, below the
// top layer, D' = D W^T backward.
template <class Space, class Scalar>
class Products {
 public:
  using Matrix = Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Space::memory_space>;
  Products(const std::vector<int>& widths, std::int64_t m) : widths_(widths), m_(m) {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const int in = widths[l], out = widths[l + 1];
      a_.push_back(Matrix("a", m, in));
      w_.push_back(Matrix("w", in, out));
      g_.push_back(Matrix("g", in, out));
      b_.push_back(Matrix("b", 1, out));
      d_.push_back(Matrix("d", m, out));
      z_.push_back(Matrix("z", m, out));
    }
    ones_ = Matrix("ones", 1, m);
    Kokkos::deep_copy(ones_, Scalar(1));
  }
  void run(const Space& space) const {
    const std::size_t L = w_.size();
    for (std::size_t l = 0; l < L; ++l)
      gradsum::gemm(space, 'N', 'N', Scalar(1), a_[l], w_[l], Scalar(0), z_[l]);
    for (std::size_t l = L; l-- > 0;) {
      gradsum::gemm(space, 'T', 'N', Scalar(1), a_[l], d_[l], Scalar(1), g_[l]);
      gradsum::gemm(space, 'N', 'N', Scalar(1), ones_, d_[l], Scalar(1), b_[l]);
      if (l > 0) gradsum::gemm(space, 'N', 'T', Scalar(1), d_[l], w_[l], Scalar(0), d_[l - 1]);
    }
  }

 private:
  std::vector<int> widths_;
  std::int64_t m_;
  std::vector<Matrix> a_, w_, g_, b_, d_, z_;
  Matrix ones_;
};

int world_rank() {
#if GRADSUM_ENABLE_MPI
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
#else
  return 0;
#endif
}
int world_size() {
#if GRADSUM_ENABLE_MPI
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
#else
  return 1;
#endif
}

// The slowest rank's seconds of `work` (a barrier first).
template <class Space, class Work>
double max_seconds(const Space& space, const Work& work) {
#if GRADSUM_ENABLE_MPI
  MPI_Barrier(MPI_COMM_WORLD);
#endif
  double t = gradsum_bench::seconds_of(space, work);
#if GRADSUM_ENABLE_MPI
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#endif
  return t;
}

template <class Space, class Scalar>
void mlp_step(benchmark::State& state, std::vector<int> widths) {
  const auto batch = std::int64_t(state.range(0));
  const int d = widths.front(), classes = widths.back();
  const int ranks = world_size(), rank = world_rank();
  const auto data = gradsum_bench::random_dataset<Space, Scalar>(batch, d, classes, 3);
  const auto rows = gradsum::partition(batch, ranks, rank);
  const Space space;
  const std::vector<int> hidden(widths.begin() + 1, widths.end() - 1);
  gradsum::MLP net(d, hidden, classes, gradsum::Activation::relu);
  auto make = [&](bool layerwise) {
    net.layerwise = layerwise;
    return gradsum::make_step<Scalar>(space, net, gradsum::SoftmaxCrossEntropy{},
                                      gradsum::SGD{1e-3}, gradsum::Objective{},
                                      gradsum::Analytic{}, gradsum::Sum{}, make_aggregation());
  };
  auto layerwise = make(true);
  if (!layerwise.layerwise()) state.SkipWithError("the step does not take the layer-wise path");
  auto theta = layerwise.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::he_normal(), theta);
  const bool compare = net.per_sample_limits().empty();
  // The step's panels: full ones of `panel` rows, then the rest.
  const std::int64_t panel = gradsum::detail::layerwise_panel_rows(net.dense_layers());
  const std::int64_t full_panels = rows.size() / panel, rest = rows.size() % panel;
  const Products<Space, Scalar> full(widths, panel), last(widths, rest);
  const auto products = [&] {
    for (std::int64_t p = 0; p < full_panels; ++p) full.run(space);
    if (rest > 0) last.run(space);
  };
  layerwise(theta, data, rows);  // checks the data once, warms up
  products();
  double step_seconds = 0, product_seconds = 0, per_sample_seconds = 0;
  std::int64_t runs = 0;
  auto per_sample = compare ? make(false) : make(true);
  if (compare) per_sample(theta, data, rows);
  for (auto _ : state) {
    // In turn, so that each sees the same machine state.
    const double step = max_seconds(space, [&] { layerwise(theta, data, rows); });
    product_seconds += max_seconds(space, products);
    if (compare) per_sample_seconds += max_seconds(space, [&] { per_sample(theta, data, rows); });
    step_seconds += step;
    ++runs;
    state.SetIterationTime(step);
  }
  double flops = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) flops += double(widths[l]) * widths[l + 1];
  flops *= 6.0 * double(batch);
  const double step = step_seconds / double(runs);
  state.counters["step_ms"] = step * 1e3;
  state.counters["GFLOPs"] = flops / step * 1e-9;
  state.counters["gemm_fraction"] = product_seconds / step_seconds;
  state.counters["ranks"] = ranks;
  state.counters["parameters"] = net.num_parameters();
  if (compare) {
    state.counters["per_sample_ms"] = per_sample_seconds / double(runs) * 1e3;
    state.counters["layerwise_speedup"] = per_sample_seconds / step_seconds;
  }
  state.SetItemsProcessed(batch * state.iterations());
}

template <class Space, class Scalar>
void register_case(const std::vector<int>& widths, std::int64_t batch) {
  std::string shape;
  for (int w : widths) {  // appends: see MLP::describe()
    if (!shape.empty()) shape += '-';
    shape += std::to_string(w);
  }
  const std::string name = std::string("mlp_step/") + gradsum::space_name<Space>() + "/" +
                           (sizeof(Scalar) == 4 ? "float" : "double") + "/" + shape;
  benchmark::RegisterBenchmark(name.c_str(), [widths](benchmark::State& state) {
    mlp_step<Space, Scalar>(state, widths);
  })
      ->Arg(batch)
      ->ArgNames({"batch"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5);
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    register_case<Space, float>({64, 256, 10}, 4096);
    register_case<Space, double>({64, 256, 10}, 4096);
    register_case<Space, float>({64, 128, 64, 10}, 8192);
    register_case<Space, float>({784, 1024, 1024, 10}, 1024);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
