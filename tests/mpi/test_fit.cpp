// SPDX-License-Identifier: Apache-2.0
// fit() under MPI: gradient accumulation on any number of ranks equals
// the single-process run with k-times-larger batches and sends a quarter
// of the messages; sharded full-batch training equals global training.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/train/fit.hpp>

#include <mpi.h>

using namespace gradsum_test;

namespace {

template <class Space, class Aggregation>
auto make_step(const Aggregation& aggregation) {
  return gradsum::make_step<double>(Space(), gradsum::Softmax(3, 3),
                                    gradsum::SoftmaxCrossEntropy{}, gradsum::Adam{0.05},
                                    gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                    aggregation);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("MPI: 4 micro-batches of 16 equal batches of 64, a quarter of the "
                          "messages",
                          Space, mpi_accumulate) {
  const auto problem = random_problem(256, 3, Kind::multiclass, 3, 51);
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  gradsum::FitOptions options;
  options.epochs = 2;
  options.seed = 8;
  options.batch = 64;
  auto single = make_step<Space>(gradsum::Local{});
  auto theta_single = single.make_parameters();
  gradsum::fit(single, theta_single, data, options);

  options.batch = 16;
  options.accumulate = 4;
  auto accumulated = make_step<Space>(gradsum::Allreduce(MPI_COMM_WORLD));
  auto theta_accumulated = accumulated.make_parameters();
  gradsum::fit(accumulated, theta_accumulated, data, options);
  CHECK(relative_distance(to_host(theta_accumulated), to_host(theta_single), 12) <= 1e-12);

  options.accumulate = 1;
  auto plain = make_step<Space>(gradsum::Allreduce(MPI_COMM_WORLD));
  auto theta_plain = plain.make_parameters();
  gradsum::fit(plain, theta_plain, data, options);
  // Per epoch: 4 (or 16) updates, one message each, and one evaluation.
  CHECK(accumulated.aggregation().calls() == 2 * (4 + 1));
  CHECK(plain.aggregation().calls() == 2 * (16 + 1));
}
TEST_CASE_TEMPLATE_APPLY(mpi_accumulate, Spaces);

TEST_CASE("MPI: sharded full-batch training equals global full-batch training") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto problem = random_problem(37, 3, Kind::multiclass, 3, 52);
  const auto all = gradsum::Dataset<double, Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  const auto mine = gradsum::partition(problem.n, mpi_size(), mpi_rank());
  const std::vector<double> x(problem.x.begin() + mine.begin * problem.d,
                              problem.x.begin() + mine.end * problem.d);
  const std::vector<double> y(problem.y.begin() + mine.begin, problem.y.begin() + mine.end);
  const auto shard =
      gradsum::Dataset<double, Space::memory_space>::from_host(mine.size(), problem.d, x, y);
  gradsum::FitOptions options;
  options.epochs = 5;
  auto global = make_step<Space>(gradsum::Allreduce(MPI_COMM_WORLD));
  auto theta_global = global.make_parameters();
  gradsum::fit(global, theta_global, all, options);
  options.sampling = gradsum::Sampling::sharded;
  auto sharded = make_step<Space>(gradsum::Allreduce(MPI_COMM_WORLD));
  auto theta_sharded = sharded.make_parameters();
  const auto result = gradsum::fit(sharded, theta_sharded, shard, options);
  CHECK(result.position.step == 5);
  CHECK(relative_distance(to_host(theta_sharded), to_host(theta_global), 12) <= 1e-12);
}
