// SPDX-License-Identifier: Apache-2.0
// Aggregation against the raw MPI_Allreduce of the same buffer, in the
// same run, 1 KiB to 64 MiB. Run under mpiexec; rank 0 reports.
//
//   mpiexec -n 2 bench_aggregation [--benchmark_out=FILE] [benchmark flags]
//
// Every iteration is timed alone between barriers and reported as the
// maximum over ranks, so all ranks see the same times and run the same
// iterations (their counts are fixed per size for the same reason).

#include <gradsum/gradsum.hpp>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Buffer = Kokkos::View<double*, Space::memory_space>;

template <class Operation>
void timed(benchmark::State& state, std::size_t bytes, Operation&& operation) {
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    operation();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(elapsed);
  }
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

void raw_mpi_allreduce(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  auto buffer = make_buffer(bytes);
  timed(state, bytes, [&] {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(buffer.extent(0)), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
  });
}

void gradsum_allreduce(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  auto buffer = make_buffer(bytes);
  gradsum::Allreduce aggregation(MPI_COMM_WORLD);
  aggregation.allocate<double, Space::memory_space>(buffer.extent(0));
  const Space space;
  timed(state, bytes, [&] { aggregation.aggregate(space, buffer); });
}

// Reports nothing: ranks other than 0 run the same benchmarks silently.
class Quiet : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::int64_t iterations_for(std::int64_t bytes) {
  return std::clamp<std::int64_t>((std::int64_t(256) << 20) / bytes, 10, 2000);
}

}  // namespace

int main(int argc, char** argv) {
  gradsum::Environment environment(argc, argv);
  for (std::int64_t bytes = 1 << 10; bytes <= (std::int64_t(64) << 20); bytes *= 4) {
    const std::string size = std::to_string(bytes);
    // Interleaved per size so that both see the same machine state.
    benchmark::RegisterBenchmark(("raw_mpi_allreduce/" + size).c_str(), raw_mpi_allreduce)
        ->Arg(bytes)->UseManualTime()->Iterations(iterations_for(bytes))->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("gradsum_allreduce/" + size).c_str(), gradsum_allreduce)
        ->Arg(bytes)->UseManualTime()->Iterations(iterations_for(bytes))->Unit(benchmark::kMicrosecond);
  }
  // Only rank 0 may write the output file (Google Benchmark truncates it
  // on every process that is given --benchmark_out).
  std::vector<char*> args(argv, argv + argc);
  if (environment.rank() != 0)
    args.erase(std::remove_if(args.begin() + 1, args.end(),
                              [](const char* a) {
                                return std::string(a).rfind("--benchmark_out", 0) == 0;
                              }),
               args.end());
  int count = int(args.size());
  benchmark::Initialize(&count, args.data());
  if (environment.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Quiet quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
