// SPDX-License-Identifier: Apache-2.0
// Worker statistics under MPI: with the same global batch split into the
// same 12 workers (12 / ranks parts on each rank), the noise estimates and
// the loss spread on 1-4 ranks equal the single-process values.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <mpi.h>

using namespace gradsum_test;

TEST_CASE("MPI: the noise scale estimates of 12 workers are the same on any number of ranks") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int ranks = mpi_size(), rank = mpi_rank();
  const std::int64_t B = 96;  // 12 workers of 8 samples, whether 1, 2, 3 or 4 ranks hold them
  const auto problem = random_problem(4 * B, 5, Kind::regression, 1, 61);
  const auto data = gradsum::Dataset<double, Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  const gradsum::Objective objective{0.01};
  auto single = gradsum::make_step<double>(Space(), gradsum::Linear(5), gradsum::SquaredError{},
                                           gradsum::SGD{0.1}, objective);
  auto spread = gradsum::make_step<double>(Space(), gradsum::Linear(5), gradsum::SquaredError{},
                                           gradsum::SGD{0.1}, objective, gradsum::Analytic{},
                                           gradsum::Sum{}, gradsum::Allreduce(MPI_COMM_WORLD));
  single.measure_workers(12);
  spread.measure_workers(12 / ranks);
  auto theta_single = single.make_parameters(), theta_spread = spread.make_parameters();
  for (std::int64_t b = 0; b < 4; ++b) {  // four SGD steps, each on the next 96 rows
    CAPTURE(b);
    const gradsum::RowRange batch{b * B, (b + 1) * B};
    const auto expected = single(theta_single, data, batch);
    const auto got = spread(theta_spread, data, gradsum::partition(batch, ranks, rank));
    CHECK(got.workers == 12);
    REQUIRE(std::isfinite(expected.noise_trace));
    CHECK(got.noise_trace == doctest::Approx(expected.noise_trace).epsilon(1e-12));
    CHECK(got.gradient_norm2_estimate ==
          doctest::Approx(expected.gradient_norm2_estimate).epsilon(1e-10));
    CHECK(got.worker_loss_spread == doctest::Approx(expected.worker_loss_spread).epsilon(1e-12));
  }
}
