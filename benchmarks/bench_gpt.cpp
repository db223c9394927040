// SPDX-License-Identifier: Apache-2.0
// One GPT training step (gradsum::make_gpt: 4 pre-norm blocks of 4 heads,
// width 128, context 64, logits tied to the token embedding; batch 32
// windows at seeded random offsets, float, AdamW) on the network path,
// per enabled backend, with in the same run:
//   - best_ms, median_ms, mean_ms of the steps timed (PyTorch's peer
//     prints the same three);
//   - tokens_per_s, and GFLOP/s of the step's 5.2 MFLOP per token
//     (6 (12 L C^2 + V C) for the products, 12 L T C for attention);
//   - gemm_GFLOPs: the rate of one product of the step's largest shape
//     (2048 x 128 by 128 x 512, float) through gradsum::gemm alone, and
//     of_gemm_rate, the step's GFLOP/s over it (1: the step runs at the
//     machine's product rate);
//   - panel_scalars_per_token: the activations the step keeps, per token.
// The text is the file GRADSUM_BENCH_TEXT names (the King James Bible:
// benchmarks/kjv-text), else examples/data/genesis.txt. Its PyTorch peer,
// benchmarks/peers/gpt_torch.py, runs the same step.
//
//   OMP_NUM_THREADS=2 bench_gpt [--benchmark_filter=REGEX]

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#ifndef GRADSUM_BENCH_DEFAULT_TEXT
#define GRADSUM_BENCH_DEFAULT_TEXT "examples/data/genesis.txt"
#endif

namespace {

std::string read_text() {
  const char* named = std::getenv("GRADSUM_BENCH_TEXT");
  const std::string path = named != nullptr ? named : GRADSUM_BENCH_DEFAULT_TEXT;
  return gradsum::read_text_file(path, "bench_gpt (GRADSUM_BENCH_TEXT)");
}

// GFLOP/s of one 2048 x 128 by 128 x 512 product (the step's widest).
template <class Space>
double gemm_rate() {
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::memory_space>;
  const Matrix a("a", 2048, 128), b("b", 128, 512), c("c", 2048, 512);
  Kokkos::deep_copy(a, 0.5f);
  Kokkos::deep_copy(b, 0.25f);
  const Space space;
  double best = 1e30;
  for (int round = 0; round < 20; ++round) {
    const auto start = std::chrono::steady_clock::now();
    gradsum::gemm(space, 'N', 'N', 1.0f, a, b, 0.0f, c);
    space.fence();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = s < best ? s : best;
  }
  return 2.0 * 2048 * 128 * 512 / best / 1e9;
}

template <class Space>
void gpt_step(benchmark::State& state) {
  using Memory = typename Space::memory_space;
  const std::string text = read_text();
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const auto split = gradsum::split_text(text, 0.1);
  const int context = 64, batch = 32, layers = 4, heads = 4, width = 128;
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(split.train, "text"), context, "text");
  const auto data = windows.template dataset<float>();
  const gradsum::GptShape shape{vocabulary.size(), context, layers, heads, width};
  const auto gpt = gradsum::make_gpt(shape);
  auto step = gradsum::make_step<float>(Space(), gpt, gradsum::SoftmaxCrossEntropy{},
                                        gradsum::AdamW{});
  auto theta = step.make_parameters();
  const auto start = gradsum::gpt_initial_parameters(shape, 1);
  auto host = Kokkos::create_mirror_view(theta);
  for (std::size_t j = 0; j < start.size(); ++j) host(j) = float(start[j]);
  Kokkos::deep_copy(theta, host);
  Kokkos::View<std::int64_t*, Memory> rows("rows", batch);
  std::int64_t s = 0;
  for (; s < 3; ++s) step(theta, data, windows.select(windows.draw_offsets(1, s, batch), rows));
  std::vector<double> ms;
  for (auto _ : state) {
    const auto selected = windows.select(windows.draw_offsets(1, s++, batch), rows);
    const double seconds = gradsum_bench::seconds_of(Space(), [&] { step(theta, data, selected); });
    state.SetIterationTime(seconds);
    ms.push_back(1e3 * seconds);
  }
  std::sort(ms.begin(), ms.end());
  double mean = 0;
  for (const double m : ms) mean += m / double(ms.size());
  const double tokens = double(batch) * context;
  const double C = width, V = vocabulary.size(), L = layers, T = context;
  const double gflop = tokens * (6 * (12 * L * C * C + V * C) + 12 * L * T * C) / 1e9;
  const double rate = gemm_rate<Space>();
  state.counters["best_ms"] = ms.front();
  state.counters["median_ms"] = ms[ms.size() / 2];
  state.counters["mean_ms"] = mean;
  state.counters["tokens_per_s"] = tokens / (mean / 1e3);
  state.counters["GFLOPs"] = gflop / (mean / 1e3);
  state.counters["gemm_GFLOPs"] = rate;
  state.counters["of_gemm_rate"] = gflop / (mean / 1e3) / rate;
  state.counters["parameters"] = step.num_parameters();
  state.counters["vocabulary"] = V;
  // The network path's buffers for one panel (the whole batch), per token.
  state.counters["panel_scalars_per_token"] =
      double(gradsum::detail::network_workspace_size(gpt)) / tokens;
}

template <class... Spaces>
void register_all(std::tuple<Spaces...>*) {
  auto per_space = [](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    const std::string name = std::string("gpt_step/") + gradsum::space_name<Space>() +
                             "/float/L4-H4-C128-T64-B32";
    benchmark::RegisterBenchmark(name.c_str(), gpt_step<Space>)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(5.0);
  };
  (per_space(static_cast<Spaces*>(nullptr)), ...);
}

}  // namespace

int main(int argc, char** argv) {
  return gradsum_bench::run(
      argc, argv, [] { register_all(static_cast<gradsum::ExecutionSpaces*>(nullptr)); });
}
