// SPDX-License-Identifier: Apache-2.0
// Aggregation against the raw MPI_Allreduce of the same buffer, in the
// same run, 1 KiB to 64 MiB, and the cost of Step::watch_workers on a
// 1 MiB gradient, an MLP step's buckets sent during its backward pass
// against one message after it, and a GPT's AdamW step with its optimizer
// state sharded over the ranks against replicated. Run under mpiexec; rank
// 0 reports.
//
//   mpiexec -n 2 bench_aggregation [--benchmark_out=FILE] [benchmark flags]
//
// Every iteration is timed alone between barriers and reported as the
// maximum over ranks, so all ranks see the same times and run the same
// iterations (their counts are fixed per size for the same reason).
// paired/SIZE alternates the two calls within one benchmark and reports
// the ratio of their medians, the comparison that noise disturbs least.

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Buffer = Kokkos::View<double*, Space::memory_space>;

// The slowest rank's time of one call to `operation`.
template <class Operation>
double max_time(Operation&& operation) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  operation();
  double elapsed = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return elapsed;
}

template <class Operation>
void timed(benchmark::State& state, std::size_t bytes, Operation&& operation) {
  for (auto _ : state) state.SetIterationTime(max_time(operation));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  state.counters["ranks"] = ranks;
  state.counters["bytes"] = double(bytes);
}

Buffer make_buffer(std::size_t bytes) {
  Buffer buffer("gradsum::bench::buffer", bytes / sizeof(double));
  Kokkos::deep_copy(buffer, 1.0);
  Kokkos::fence();
  return buffer;
}

// One buffer and the two ways of summing it across the ranks.
struct Allreduces {
  explicit Allreduces(std::size_t bytes)
      : buffer(make_buffer(bytes)), aggregation(MPI_COMM_WORLD) {
    aggregation.allocate<double, Space::memory_space>(buffer.extent(0));
  }
  void raw() {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(buffer.extent(0)), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  void gradsum() { aggregation.aggregate(Space(), buffer); }

  Buffer buffer;
  gradsum::Allreduce aggregation;
};

void raw_mpi_allreduce(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  Allreduces calls(bytes);
  timed(state, bytes, [&] { calls.raw(); });
}

void gradsum_allreduce(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  Allreduces calls(bytes);
  timed(state, bytes, [&] { calls.gradsum(); });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// gradsum's aggregation and the raw MPI_Allreduce in alternate calls of
// one run, so that both see the same machine state: `ratio` is the median
// gradsum time over the median raw time (the target: <= 1.05 from
// 1 MiB on). Reports gradsum's time.
void paired(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  Allreduces calls(bytes);
  std::vector<double> raw, ours;
  for (auto _ : state) {
    // Which goes first alternates, so neither always finds the caches warm.
    if (raw.size() % 2 == 0) {
      raw.push_back(max_time([&] { calls.raw(); }));
      ours.push_back(max_time([&] { calls.gradsum(); }));
    } else {
      ours.push_back(max_time([&] { calls.gradsum(); }));
      raw.push_back(max_time([&] { calls.raw(); }));
    }
    state.SetIterationTime(ours.back());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
  state.counters["raw_median_us"] = median(raw) * 1e6;
  state.counters["gradsum_median_us"] = median(ours) * 1e6;
  state.counters["ratio"] = median(ours) / median(raw);
  state.counters["bytes"] = double(bytes);
}

// The rank-order sum in 1 MiB buckets, flat and in two levels on nodes of
// 2 consecutive ranks (--ranks-per-node 2), and the raw MPI_Allreduce, in
// turn in one run: the medians and the best, and `two_level_ratio` =
// two-level over flat (medians). On one machine every rank shares the
// same memory, so this measures what the two levels cost, not what they
// save across a network.
void sum_algorithms(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  const gradsum::Buckets buckets{0, (std::size_t(1) << 20) / sizeof(double)};
  Allreduces calls(bytes);
  auto make = [&](gradsum::SumAlgorithm algorithm) {
    gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, buckets,
                           {algorithm, 2});
    sum.allocate<double, Space::memory_space>(calls.buffer.extent(0));
    return sum;
  };
  gradsum::Allreduce flat = make(gradsum::SumAlgorithm::flat);
  gradsum::Allreduce two = make(gradsum::SumAlgorithm::two_level);
  std::vector<double> raw, flat_times, two_times;
  for (auto _ : state) {
    raw.push_back(max_time([&] { calls.raw(); }));
    flat_times.push_back(max_time([&] { flat.aggregate(Space(), calls.buffer); }));
    two_times.push_back(max_time([&] { two.aggregate(Space(), calls.buffer); }));
    state.SetIterationTime(two_times.back());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
  state.counters["raw_median_us"] = median(raw) * 1e6;
  state.counters["flat_median_us"] = median(flat_times) * 1e6;
  state.counters["two_level_median_us"] = median(two_times) * 1e6;
  state.counters["two_level_ratio"] = median(two_times) / median(flat_times);
  state.counters["raw_best_us"] = *std::min_element(raw.begin(), raw.end()) * 1e6;
  state.counters["flat_best_us"] = *std::min_element(flat_times.begin(), flat_times.end()) * 1e6;
  state.counters["two_level_best_us"] = *std::min_element(two_times.begin(), two_times.end()) * 1e6;
  state.counters["nodes"] = two.nodes();
}

std::int64_t iterations_for(std::int64_t bytes) {
  return std::clamp<std::int64_t>((std::int64_t(256) << 20) / bytes, 10, 2000);
}

// paired/ takes at least 40 pairs: its ratio compares two medians of the
// same MPI call, which with fewer pairs still varied by a few percent.
std::int64_t pairs_for(std::int64_t bytes) {
  return std::max<std::int64_t>(iterations_for(bytes), 40);
}

// Step::watch_workers on a 1 MiB gradient (a linear model of 131071
// features, P = 131072 doubles, `rows` samples per rank; the workers are
// the ranks from 3 on, else 4 / ranks parts of each rank's rows): the
// same step plain, measuring its workers (measure_workers, the noise
// statistics watching builds on) and watched, in turn; `ratio` is the
// median watched step over the median plain one (the aim: under 1.05),
// `ratio_measured` over the median measuring one.
void watch_workers_cost(benchmark::State& state) {
  const int d = (1 << 17) - 1;
  const auto rows = std::int64_t(state.range(0));
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  gradsum::detail::SplitMix64 random(29);
  std::vector<double> x(static_cast<std::size_t>(rows * d)), y(static_cast<std::size_t>(rows));
  for (double& v : x) v = gradsum_bench::random_feature(random);
  for (double& v : y) v = gradsum_bench::random_feature(random);
  const auto data =
      gradsum::Dataset<double, Space::memory_space>::from_host(rows, d, x, y);
  auto make = [] {
    return gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                      gradsum::SGD{1e-6}, gradsum::Objective{},
                                      gradsum::Analytic{}, gradsum::Sum{},
                                      gradsum::Allreduce(MPI_COMM_WORLD));
  };
  auto plain = make(), measured = make(), watched = make();
  const int parts = ranks >= 3 ? 1 : 4 / ranks;
  measured.measure_workers(parts);
  watched.watch_workers(parts);
  const auto theta = plain.make_parameters();
  std::vector<double> base, middle, ours;
  for (auto _ : state) {
    // Which goes first rotates, so none always finds the caches warm.
    const std::size_t first = base.size();
    for (std::size_t i = 0; i < 3; ++i) {
      switch ((i + first) % 3) {
        case 0: base.push_back(max_time([&] { plain.evaluate(theta, data); })); break;
        case 1: middle.push_back(max_time([&] { measured.evaluate(theta, data); })); break;
        default: ours.push_back(max_time([&] { watched.evaluate(theta, data); }));
      }
    }
    state.SetIterationTime(ours.back());
  }
  state.counters["plain_median_us"] = median(base) * 1e6;
  state.counters["measured_median_us"] = median(middle) * 1e6;
  state.counters["watched_median_us"] = median(ours) * 1e6;
  state.counters["ratio"] = median(ours) / median(base);
  state.counters["ratio_measured"] = median(ours) / median(middle);
  state.counters["ranks"] = ranks;
  state.counters["rows_per_rank"] = double(rows);
}

// The step model's exposed fraction, early buckets and bucketed step for
// buckets of `cap` bytes (plan/overlap.hpp), from the backward profile of
// the step without communication whose end is the median, and the link as
// gradsum's rank-order sum of the n values in one bucket after the
// backward pass measured it: `comm` seconds beyond the compute `compute`,
// read as bandwidth alone. Compared with the measured `exposed_fraction`,
// `early` and `buckets_median_us` (`predicted_step_error`: predicted over
// measured step, minus 1).
void predict_overlap_counters(benchmark::State& state,
                              std::vector<std::vector<gradsum::plan::FinalPoint>> profiles,
                              std::size_t n, std::size_t cap, double compute, double comm) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (profiles.empty() || profiles.front().empty() || !(comm > 0) || ranks < 2) return;
  std::sort(profiles.begin(), profiles.end(),
            [](const auto& a, const auto& b) { return a.back().seconds < b.back().seconds; });
  const auto& profile = profiles[profiles.size() / 2];
  const double bytes = double(n) * sizeof(float);
  const gradsum::plan::Network link{2.0 * (ranks - 1) / ranks * bytes / comm, 0.0};
  const auto p = gradsum::plan::predict_overlap(profile, n, sizeof(float),
                                                gradsum::Buckets{0, cap / sizeof(float)}, link,
                                                ranks, gradsum::mpi::message_elements());
  state.counters["predicted_exposed_fraction"] = p.exposed_seconds / comm;
  state.counters["predicted_early"] = double(p.early_buckets);
  state.counters["link_MBps"] = link.bandwidth / 1e6;
  const double predicted = compute + p.exposed_seconds;
  state.counters["predicted_buckets_us"] = predicted * 1e6;
  state.counters["predicted_step_error"] =
      predicted / (state.counters["buckets_median_us"] * 1e-6) - 1;
}

// A step four ways, in turn (`make(aggregation)` builds it; `evaluate(step)`
// runs it on this rank's rows): without communication (Local: the compute
// alone), with one message after the backward pass (MPI_Allreduce), with
// gradsum's rank-order sum in one bucket after it (what the step model's
// link is read from: on 3 ranks Open MPI's allreduce of this size takes
// another algorithm), and with buckets of `cap` bytes sent while the
// backward pass runs. The communication is one message's time beyond the
// compute, the exposed communication the buckets' time beyond it:
// `exposed_fraction` (exposed over communication; the aim: at most 0.15 on
// a link slow enough that `comm_fraction`, the communication's share of
// the one-message step, is a third or more) and `early`, the buckets that
// left while layers were still to run, per step.
template <class Make, class Evaluate>
void overlap(benchmark::State& state, std::size_t cap, const Make& make, const Evaluate& evaluate) {
  auto alone = make(gradsum::Local{});
  auto one = make(gradsum::Allreduce(MPI_COMM_WORLD));
  auto buckets = make(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                                         gradsum::Buckets{0, cap / sizeof(float)}));
  auto whole = make(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                                       gradsum::Buckets{0, gradsum::mpi::message_elements()}));
  std::vector<double> compute, message, bucketed, one_bucket;
  std::vector<std::vector<gradsum::plan::FinalPoint>> profiles;
  for (int warm = 0; warm < 2; ++warm)
    evaluate(alone), evaluate(one), evaluate(buckets), evaluate(whole);
  const auto early = buckets.aggregation().early_buckets();
  for (auto _ : state) {
    const std::size_t first = compute.size();
    for (std::size_t i = 0; i < 4; ++i) {
      switch ((i + first) % 4) {
        case 0:
          compute.push_back(max_time([&] {
            gradsum::plan::BackwardRecorder recorder;
            evaluate(alone);
            profiles.push_back(recorder.profile(sizeof(float)));
          }));
          break;
        case 1: message.push_back(max_time([&] { evaluate(one); })); break;
        case 2: one_bucket.push_back(max_time([&] { evaluate(whole); })); break;
        default: bucketed.push_back(max_time([&] { evaluate(buckets); }));
      }
    }
    state.SetIterationTime(bucketed.back());
  }
  const double c = median(compute), m = median(message), b = median(bucketed),
               w = median(one_bucket);
  state.counters["compute_median_us"] = c * 1e6;
  state.counters["one_message_median_us"] = m * 1e6;
  state.counters["one_bucket_median_us"] = w * 1e6;
  state.counters["buckets_median_us"] = b * 1e6;
  state.counters["comm_fraction"] = (m - c) / m;
  state.counters["exposed_fraction"] = (b - c) / (m - c);
  state.counters["early"] =
      double(buckets.aggregation().early_buckets() - early) / double(bucketed.size());
  state.counters["cap_bytes"] = double(cap);
  predict_overlap_counters(state, std::move(profiles), std::size_t(alone.num_parameters()), cap,
                           c, w - c);
}

// The MLP 784-1024-1024-10 in float, 256 samples per rank.
void overlap_mlp(benchmark::State& state) {
  const gradsum::MLP net(784, {1024, 1024}, 10, gradsum::Activation::relu);
  const auto data = gradsum_bench::random_dataset<Space, float>(256, 784, 10, 41);
  Kokkos::View<float*, Space::memory_space> theta("theta", net.num_parameters());
  gradsum::initialize(net, gradsum::Initializer::he_normal().with_seed(5), theta);
  overlap(
      state, std::size_t(state.range(0)),
      [&](const auto& aggregation) {
        return gradsum::make_step<float>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                         gradsum::SGD{1e-3}, gradsum::Objective{},
                                         gradsum::Analytic{}, gradsum::Sum{}, aggregation);
      },
      [&](auto& step) { step.evaluate(theta, data); });
}

// The GPT of bench_gpt (4 layers, 4 heads, width 128, context 64, float)
// on the examples' text, 32 windows per step split among the ranks.
struct GptProblem {
  using Memory = Space::memory_space;
  GptProblem()
      : text(gradsum::read_text_file(GRADSUM_BENCH_DEFAULT_TEXT, "bench_aggregation")),
        vocabulary(gradsum::CharVocabulary::of_text(text, "text")),
        windows(vocabulary.encode(text, "text"), 64, "text"),
        data(windows.dataset<float>()),
        shape{vocabulary.size(), 64, 4, 4, 128},
        index("rows", 32) {
    int ranks = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const auto all = windows.draw_offsets(1, 0, 32);
    rows = windows.select(std::vector<std::int64_t>(all.begin() + 32 * rank / ranks,
                                                    all.begin() + 32 * (rank + 1) / ranks),
                          index);
  }
  // The initial parameters of bench_gpt, seed 1.
  Kokkos::View<float*, Memory> initial_parameters() const {
    Kokkos::View<float*, Memory> theta("theta", gradsum::make_gpt(shape).num_parameters());
    const auto start = gradsum::gpt_initial_parameters(shape, 1);
    auto host = Kokkos::create_mirror_view(theta);
    for (std::size_t j = 0; j < start.size(); ++j) host(j) = float(start[j]);
    Kokkos::deep_copy(theta, host);
    return theta;
  }
  template <class Optimizer, class Aggregation>
  auto step(const Optimizer& optimizer, const Aggregation& aggregation) const {
    return gradsum::make_step<float>(Space(), gradsum::make_gpt(shape),
                                     gradsum::SoftmaxCrossEntropy{}, optimizer,
                                     gradsum::Objective{0.0, true}, gradsum::Analytic{},
                                     gradsum::Sum{}, aggregation);
  }

  std::string text;
  gradsum::CharVocabulary vocabulary;
  gradsum::TextWindows<Memory> windows;
  decltype(windows.dataset<float>()) data;
  gradsum::GptShape shape;
  Kokkos::View<std::int64_t*, Memory> index;
  decltype(windows.select(std::vector<std::int64_t>{}, index)) rows;
};

void overlap_gpt(benchmark::State& state) {
  const GptProblem gpt;
  const auto theta = gpt.initial_parameters();
  overlap(
      state, std::size_t(state.range(0)),
      [&](const auto& aggregation) { return gpt.step(gradsum::SGD{1e-3}, aggregation); },
      [&](auto& step) { step.evaluate(theta, gpt.data, gpt.rows); });
}

// The GPT's AdamW training step with the optimizer state replicated and
// sharded over the ranks (ZeRO stage 1), alternating, each from its own
// copy of the parameters; the time reported is the sharded step's.
// Counters: the medians, `step_ratio` (sharded over replicated; the aim:
// at most 1.1 on 4 ranks), and the optimizer state per rank in bytes,
// replicated and sharded, with `memory_ratio` (the aim: at most 0.3 on 4
// ranks).
void zero1_gpt(benchmark::State& state) {
  const GptProblem gpt;
  const gradsum::AdamW adamw{3e-4};
  auto replicated = gpt.step(adamw, gradsum::Allreduce(MPI_COMM_WORLD));
  gradsum::Allreduce sharding(MPI_COMM_WORLD);
  sharding.shard_optimizer();
  auto sharded = gpt.step(adamw, sharding);
  const auto theta_replicated = gpt.initial_parameters(), theta_sharded = gpt.initial_parameters();
  for (int warm = 0; warm < 2; ++warm) {
    replicated(theta_replicated, gpt.data, gpt.rows);
    sharded(theta_sharded, gpt.data, gpt.rows);
  }
  std::vector<double> whole, split;
  for (auto _ : state) {
    const bool sharded_first = whole.size() % 2 == 1;
    if (sharded_first) split.push_back(max_time([&] { sharded(theta_sharded, gpt.data, gpt.rows); }));
    whole.push_back(max_time([&] { replicated(theta_replicated, gpt.data, gpt.rows); }));
    if (!sharded_first) split.push_back(max_time([&] { sharded(theta_sharded, gpt.data, gpt.rows); }));
    state.SetIterationTime(split.back());
  }
  const double bytes_whole = double(replicated.optimizer_state().span() * sizeof(float));
  double bytes_split = double(sharded.optimizer_state().span() * sizeof(float));
  MPI_Allreduce(MPI_IN_PLACE, &bytes_split, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  state.counters["replicated_median_us"] = median(whole) * 1e6;
  state.counters["sharded_median_us"] = median(split) * 1e6;
  state.counters["step_ratio"] = median(split) / median(whole);
  state.counters["state_bytes_replicated"] = bytes_whole;
  state.counters["state_bytes_sharded"] = bytes_split;
  state.counters["memory_ratio"] = bytes_split / bytes_whole;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  state.counters["ranks"] = ranks;
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(argc, argv, [] {
    for (std::int64_t bytes = 1 << 10; bytes <= (std::int64_t(64) << 20); bytes *= 4) {
      const std::string size = std::to_string(bytes);
      // Interleaved per size so that both see the same machine state.
      benchmark::RegisterBenchmark(("raw_mpi_allreduce/" + size).c_str(), raw_mpi_allreduce)
          ->Arg(bytes)->UseManualTime()->Iterations(iterations_for(bytes))->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("gradsum_allreduce/" + size).c_str(), gradsum_allreduce)
          ->Arg(bytes)->UseManualTime()->Iterations(iterations_for(bytes))->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("paired/" + size).c_str(), paired)
          ->Arg(bytes)->UseManualTime()->Iterations(pairs_for(bytes))->Unit(benchmark::kMicrosecond);
    }
    for (std::int64_t bytes : {std::int64_t(1) << 20, std::int64_t(16) << 20})
      benchmark::RegisterBenchmark(("sum_algorithms/" + std::to_string(bytes)).c_str(),
                                   sum_algorithms)
          ->Arg(bytes)->UseManualTime()->Iterations(30)->Unit(benchmark::kMicrosecond);
    for (std::int64_t rows : {16, 64, 256})
      benchmark::RegisterBenchmark(("watch_workers/1MiB/rows:" + std::to_string(rows)).c_str(),
                                   watch_workers_cost)
          ->Arg(rows)->UseManualTime()->Iterations(40)->Unit(benchmark::kMicrosecond);
    for (std::int64_t cap : {std::int64_t(1) << 17, std::int64_t(1) << 18, std::int64_t(1) << 20}) {
      const std::string bytes = "/cap:" + std::to_string(cap);
      benchmark::RegisterBenchmark(("overlap/mlp784-1024-1024-10" + bytes).c_str(), overlap_mlp)
          ->Arg(cap)->UseManualTime()->Iterations(15)->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("overlap/gpt4x4x128x64" + bytes).c_str(), overlap_gpt)
          ->Arg(cap)->UseManualTime()->Iterations(15)->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark("zero1/gpt4x4x128x64/adamw", zero1_gpt)
        ->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond);
  });
}
