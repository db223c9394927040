// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/plan/cost_model.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gradsum {
namespace mpi {

/// What measure_network() timed, besides the fitted network.
struct NetworkProbe {
  /// Latency and bandwidth in the ring model's terms.
  plan::Network network;
  /// Best (over repetitions) of the slowest rank's MPI_Allreduce time of
  /// one double and of `large_bytes` bytes.
  double small_seconds = 0, large_seconds = 0;
  /// Size of the large message.
  double large_bytes = 0;
};

/// Measures the network the way the cost model uses it: times an
/// MPI_Allreduce (MPI_SUM, doubles) of 8 bytes and of `large_bytes` bytes
/// over `comm`, `repetitions` times each after a barrier, keeping the best
/// of the slowest rank's times, and solves the ring model
/// T(bytes) = 2 (N-1)/N · bytes / bandwidth + 2 (N-1) · latency
/// for latency (from the small message) and bandwidth (from the large one).
///
/// Collective over `comm`; every rank gets the same result. Needs at least
/// two ranks. Throws gradsum::Error on bad arguments or failed MPI calls.
inline NetworkProbe measure_network(MPI_Comm comm, std::size_t large_bytes = std::size_t(1) << 24,
                                    int repetitions = 10) {
  const Communicator c(comm);
  if (c.size() < 2)
    fail("gradsum::mpi::measure_network: needs at least 2 ranks to time a network, got ",
                 c.size());
  if (large_bytes < 1024 || large_bytes > (std::size_t(1) << 30))
    fail("gradsum::mpi::measure_network: large_bytes must be in [1024, 2^30], got ",
                 large_bytes);
  if (repetitions < 1)
    fail("gradsum::mpi::measure_network: repetitions must be at least 1, got ",
                 repetitions);
  std::vector<double> buffer(large_bytes / sizeof(double), 1.0);
  auto time = [&](int count) {
    double best = 0;
    for (int r = -1; r < repetitions; ++r) {  // r = -1 warms up
      check(MPI_Barrier(c.get()), "MPI_Barrier");
      const double start = MPI_Wtime();
      check(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_DOUBLE, MPI_SUM, c.get()),
            "MPI_Allreduce");
      double t = MPI_Wtime() - start;
      check(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, c.get()), "MPI_Allreduce");
      if (r == 0 || (r > 0 && t < best)) best = t;
    }
    return best;
  };
  NetworkProbe probe;
  const int count = int(buffer.size());
  probe.large_bytes = double(count) * sizeof(double);
  probe.small_seconds = time(1);
  probe.large_seconds = time(count);
  const double n = c.size();
  probe.network.latency = probe.small_seconds / (2 * (n - 1));
  const double transfer = probe.large_seconds - 2 * (n - 1) * probe.network.latency;
  // A large message faster than the start-up of a small one cannot be
  // split into the two terms; fall back to its whole time.
  probe.network.bandwidth = 2 * (n - 1) / n * probe.large_bytes /
                            (transfer > 0 ? transfer : probe.large_seconds);
  return probe;
}

}  // namespace mpi
}  // namespace gradsum
