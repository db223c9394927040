// SPDX-License-Identifier: Apache-2.0
// Validates the cost model of gradsum/plan on this machine: calibrate the
// per-sample time of the real step (logistic regression) on one rank, time
// the network with MPI_Allreduce, predict the step time on 1 and 2 ranks
// for four batch sizes, then measure those steps and print the prediction
// error. Run it under mpiexec with 2 ranks, one thread each:
//
//   OMP_NUM_THREADS=1 mpiexec -n 2 plan_validation [REPETITIONS]
//
// (scripts/validate-plan does exactly that). The calibration batches
// (10,000 and 100,000 samples) differ from the validated ones, so the
// prediction is not the measurement read back. Each row shows the wall
// clock (median and best of the repetitions, the slowest rank's) and the
// median CPU time of the slowest rank's thread: on a machine shared with
// other jobs the wall clock also counts the time they took the core.

#include <gradsum/gradsum.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <time.h>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Scalar = double;
using Data = gradsum::Dataset<Scalar, Space::memory_space>;
constexpr int d = 32;

struct Timing {
  double best = 0, median = 0;  // wall clock
  double cpu = 0;               // median CPU time of the calling thread
};

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// CPU time of this thread: unlike the wall clock, it does not count the
// time other processes on a shared machine take the core from us.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The slowest rank's time of one step per repetition, after a barrier.
// Step r takes the r-th batch of `batch` rows (wrapping around the data
// set, as an epoch does, so that rows come from memory, not from the
// cache the previous step filled); this rank takes `part` of each batch
// (its first and second half on two ranks).
template <class Step, class Theta>
Timing time_steps(Step& step, const Theta& theta, const Data& data, std::int64_t batch, int part,
                  int parts, MPI_Comm comm, int repetitions) {
  std::vector<double> times, cpu;
  const std::int64_t batches = data.num_samples() / batch;
  auto rows = [&](int r) {
    const std::int64_t begin = (r % batches) * batch;
    const std::int64_t share = (batch + parts - 1) / parts;
    const std::int64_t lo = std::min(batch, part * share), hi = std::min(batch, lo + share);
    return gradsum::RowRange{begin + lo, begin + hi};
  };
  step(theta, data, rows(repetitions));  // warm-up
  for (int r = 0; r < repetitions; ++r) {
    const auto mine = rows(r);
    gradsum::mpi::check(MPI_Barrier(comm), "MPI_Barrier");
    const double cpu_start = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    step(theta, data, mine);
    double t[2] = {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                   thread_cpu_seconds() - cpu_start};
    gradsum::mpi::check(MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, comm),
                        "MPI_Allreduce");
    times.push_back(t[0]);
    cpu.push_back(t[1]);
  }
  Timing timing;
  timing.best = *std::min_element(times.begin(), times.end());
  timing.median = median(times);
  timing.cpu = median(cpu);
  return timing;
}

double error_percent(double predicted, double measured) {
  return 100 * (predicted - measured) / measured;
}

}  // namespace

int main(int argc, char* argv[]) {
  gradsum::Environment environment(argc, argv);
  const int rank = environment.rank();
  const int ranks = environment.size();
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 20;
  try {
    if (ranks != 2) gradsum::fail("plan_validation: run it on 2 ranks, got ", ranks);
    if (repetitions < 1)
      gradsum::fail("plan_validation: REPETITIONS must be at least 1, got ", argv[1]);
    // Every rank holds the same 400,000 samples (100 MB, more than the
    // caches; same seed): consecutive batches of B rows, each split into
    // contiguous halves on two ranks.
    const std::int64_t n = 400000;
    std::vector<double> x(static_cast<std::size_t>(n) * d), y(static_cast<std::size_t>(n));
    std::mt19937_64 rng(42);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = double(rng() % 2);
    const auto data = Data::from_host(n, d, x, y);
    const gradsum::Linear model(d);
    const gradsum::BinaryCrossEntropy loss;
    const gradsum::SGD sgd{0.01};

    // 1. Calibration: the real step, on rank 0 alone.
    gradsum::plan::Calibration calibration;
    if (rank == 0) {
      auto step = gradsum::make_step<Scalar>(Space(), model, loss, sgd);
      auto theta = step.make_parameters();
      calibration = gradsum::plan::calibrate(step, theta, data, 10000, 100000, repetitions);
    }
    double c[2] = {calibration.seconds_per_sample, calibration.overhead_seconds};
    gradsum::mpi::check(MPI_Bcast(c, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    // 2. The network, as the ring model sees it.
    const auto probe = gradsum::mpi::measure_network(MPI_COMM_WORLD, std::size_t(1) << 22);

    // The step's message: P gradient sums plus loss, count, failures and
    // the non-finite flag.
    const double bytes = double(model.num_parameters() + 4) * sizeof(Scalar);
    if (rank == 0) {
      std::printf("plan_validation: logistic regression, d = %d, double, %s space, 1 thread per "
                  "rank, best and median of %d steps\n",
                  d, gradsum::space_name<Space>().c_str(), repetitions);
      std::printf("calibration (1 rank, batches %lld and %lld): %.4g us/sample, overhead %.4g us\n",
                  (long long)calibration.small_batch, (long long)calibration.large_batch,
                  c[0] * 1e6, c[1] * 1e6);
      std::printf("network (MPI_Allreduce, 2 ranks): latency %.3g us, bandwidth %.3g GB/s "
                  "(8 B in %.3g us, %.3g MB in %.3g us); step message %.0f bytes\n",
                  probe.network.latency * 1e6, probe.network.bandwidth / 1e9,
                  probe.small_seconds * 1e6, probe.large_bytes / 1e6, probe.large_seconds * 1e6,
                  bytes);
      std::printf("%8s %6s %14s %12s %10s %12s %9s %9s %9s\n", "batch", "ranks",
                  "predicted [ms]", "median [ms]", "best [ms]", "cpu med [ms]", "err(med)",
                  "err(best)", "err(cpu)");
    }
    for (std::int64_t batch : {std::int64_t(20000), std::int64_t(50000), std::int64_t(200000), std::int64_t(400000)}) {
      gradsum::plan::Workload work;
      work.samples_per_epoch = double(batch);
      work.batch = double(batch);
      work.seconds_per_sample = c[0];
      work.overhead_seconds = c[1];
      work.gradient_bytes = bytes;
      for (int workers : {1, 2}) {
        const auto p = gradsum::plan::predict(work, probe.network, workers);
        Timing measured;
        if (workers == 1) {
          // One worker: the single-process step on rank 0; rank 1 waits.
          if (rank == 0) {
            auto step = gradsum::make_step<Scalar>(Space(), model, loss, sgd);
            auto theta = step.make_parameters();
            measured = time_steps(step, theta, data, batch, 0, 1, MPI_COMM_SELF, repetitions);
          }
          gradsum::mpi::check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        } else {
          auto step = gradsum::make_step<Scalar>(Space(), model, loss, sgd, gradsum::Objective{},
                                                 gradsum::Analytic{}, gradsum::Sum{},
                                                 gradsum::Allreduce(MPI_COMM_WORLD));
          auto theta = step.make_parameters();
          measured = time_steps(step, theta, data, batch, rank, 2, MPI_COMM_WORLD, repetitions);
        }
        if (rank == 0)
          std::printf("%8lld %6d %14.4g %12.4g %10.4g %12.4g %+8.1f%% %+8.1f%% %+8.1f%%\n",
                      (long long)batch, workers, p.step_seconds * 1e3, measured.median * 1e3,
                      measured.best * 1e3, measured.cpu * 1e3,
                      error_percent(p.step_seconds, measured.median),
                      error_percent(p.step_seconds, measured.best),
                      error_percent(p.step_seconds, measured.cpu));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_validation: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 0;
}
