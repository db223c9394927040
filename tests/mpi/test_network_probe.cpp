// SPDX-License-Identifier: Apache-2.0
// measure_network under mpiexec with 1 to 4 ranks: it needs two ranks,
// rejects bad arguments on every rank alike, and gives every rank the same
// latency and bandwidth, consistent with the times it measured.

#include "../test_helpers.hpp"

#include <gradsum/mpi/network_probe.hpp>

#include <mpi.h>

#include <cmath>

TEST_CASE("measure_network: the ring model's latency and bandwidth, the same on every rank") {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks < 2) {
    CHECK_THROWS_WITH_AS(gradsum::mpi::measure_network(MPI_COMM_WORLD),
                         "gradsum::mpi::measure_network: needs at least 2 ranks to time a "
                         "network, got 1",
                         gradsum::Error);
    return;
  }
  CHECK_THROWS_WITH_AS(gradsum::mpi::measure_network(MPI_COMM_WORLD, 1000),
                       "gradsum::mpi::measure_network: large_bytes must be in [1024, 2^30], got 1000",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::mpi::measure_network(MPI_COMM_WORLD, 4096, 0),
                       "gradsum::mpi::measure_network: repetitions must be at least 1, got 0",
                       gradsum::Error);
  const auto probe = gradsum::mpi::measure_network(MPI_COMM_WORLD, std::size_t(1) << 20, 3);
  CHECK(probe.large_bytes == double(std::size_t(1) << 20));
  CHECK(probe.network.latency >= 0);
  CHECK(std::isfinite(probe.network.latency));
  CHECK(probe.network.bandwidth > 0);
  CHECK(std::isfinite(probe.network.bandwidth));
  // Latency from the small message: T(8 B) = 2 (N-1) latency.
  CHECK(probe.network.latency * 2 * (ranks - 1) == doctest::Approx(probe.small_seconds));
  // Every rank holds the same numbers (each is a maximum over ranks).
  double mine[2] = {probe.network.latency, probe.network.bandwidth};
  double low[2], high[2];
  MPI_Allreduce(mine, low, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, high, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(low[0] == high[0]);
  CHECK(low[1] == high[1]);
}
