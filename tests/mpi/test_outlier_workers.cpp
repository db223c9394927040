// SPDX-License-Identifier: Apache-2.0
// Outlier workers under MPI: the worker whose rows had their features
// multiplied by 10 is named, and only it; on clean data none is; with
// fewer than three workers every rank refuses alike. The workers are the
// ranks from 3 ranks on, else 4 / ranks parts of each rank's rows.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <mpi.h>

using namespace gradsum_test;

TEST_CASE("MPI: watch_workers names the worker of the corrupted shard and no other") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int ranks = mpi_size(), rank = mpi_rank();
  const int parts = ranks >= 3 ? 1 : 4 / ranks, W = parts * ranks;
  const std::int64_t N = 480;
  const int d = 5;
  const auto mine = gradsum::partition(N, ranks, rank);
  // The last worker's rows: the last part of the last rank's.
  const auto bad = gradsum::partition(gradsum::partition(N, ranks, ranks - 1), parts, parts - 1);
  for (const bool corrupt : {true, false}) {
    CAPTURE(corrupt);
    auto problem = random_problem(N, d, Kind::regression, 1, 83);
    if (corrupt)
      for (std::int64_t i = bad.begin; i < bad.end; ++i)
        for (int j = 0; j < d; ++j) problem.x[std::size_t(i * d + j)] *= 10;
    const auto data = gradsum::Dataset<double, Space::memory_space>::from_host(
        problem.n, problem.d, problem.x, problem.y);
    auto step = gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                           gradsum::SGD{0.002}, gradsum::Objective{},
                                           gradsum::Analytic{}, gradsum::Sum{},
                                           gradsum::Allreduce(MPI_COMM_WORLD));
    step.watch_workers(parts);
    auto theta = step.make_parameters();
    int named_bad = 0, named_other = 0;
    for (int s = 0; s < 10; ++s) {
      const auto r = step(theta, data, mine);
      REQUIRE(r.worker_ratios.size() == std::size_t(W));
      for (int w : r.outliers) (w == W - 1 ? named_bad : named_other) += 1;
      if (corrupt && s == 0) {
        REQUIRE(r.outliers.size() == 1);
        CHECK(r.outliers[0] == W - 1);
      }
    }
    CHECK(named_other == 0);
    // Named in the first step for certain; later, as the workers' gradients
    // come to cancel, its ratio falls towards W - 1 (2 with 3 workers).
    if (corrupt) CHECK(named_bad >= 1);
    else CHECK(named_bad == 0);
    // Every rank holds the same ratios: they come from one collective.
    const auto r = step.evaluate(theta, data, mine);
    double first = r.worker_ratios[0], low = first, high = first;
    MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(low == high);
  }
}

TEST_CASE("MPI: watch_workers with fewer than three workers fails on every rank alike") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int ranks = mpi_size();
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(2), gradsum::SquaredError{},
                                         gradsum::SGD{}, gradsum::Objective{}, gradsum::Analytic{},
                                         gradsum::Sum{}, gradsum::Allreduce(MPI_COMM_WORLD));
  if (ranks < 3) {
    CHECK_THROWS_WITH(step.watch_workers(1),
                      gradsum::detail::concat(
                          "gradsum::Step::watch_workers: naming an outlier needs at least 3 "
                          "workers (parts_per_rank x ranks), got 1 x ", ranks, " = ", ranks,
                          "; with two, each is as far from the other and neither can be named")
                          .c_str());
  } else {
    step.watch_workers(1);
  }
  // No rank is left behind in a collective: the next one completes.
  int one = 1;
  MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(one == ranks);
}
