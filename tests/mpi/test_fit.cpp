// SPDX-License-Identifier: Apache-2.0
// fit() under MPI: gradient accumulation on any number of ranks equals
// the single-process run with k-times-larger batches and sends a quarter
// of the messages; sharded full-batch training equals global training;
// standardization over all ranks equals single-process standardization.

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
  // 3 rows leave a rank without any on 4 ranks.
  for (std::int64_t n : {37, 3}) {
    INFO("rows " << n);
    const auto problem = random_problem(n, 3, Kind::multiclass, 3, 52);
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
}

TEST_CASE("MPI: standardization over every rank's shard equals single-process standardization") {
  const auto table =
      gradsum::read_csv("/usr/lib/python3/dist-packages/sklearn/datasets/data/wine_data.csv");
  const auto expected = gradsum::StandardScaler::fit(table);
  // Rank r holds its contiguous part of the rows.
  const auto mine = gradsum::partition(std::int64_t(table.num_rows), mpi_size(), mpi_rank());
  gradsum::Table shard;
  shard.num_rows = std::size_t(mine.size());
  shard.num_features = table.num_features;
  shard.features.assign(table.features.begin() + mine.begin * std::int64_t(table.num_features),
                        table.features.begin() + mine.end * std::int64_t(table.num_features));
  shard.targets.assign(table.targets.begin() + mine.begin, table.targets.begin() + mine.end);
  gradsum::Allreduce aggregation(MPI_COMM_WORLD);
  const auto scaler = gradsum::fit_global_scaler(shard, aggregation);
  REQUIRE(scaler.mean.size() == expected.mean.size());
  for (std::size_t j = 0; j < scaler.mean.size(); ++j) {
    CHECK(scaler.mean[j] == doctest::Approx(expected.mean[j]).epsilon(1e-14));
    CHECK(scaler.scale[j] == doctest::Approx(expected.scale[j]).epsilon(1e-13));
  }
  // A rank with other columns fails every rank, none waits.
  if (mpi_size() > 1 && mpi_rank() == mpi_size() - 1) {
    shard.num_features -= 1;
    shard.features.resize(shard.num_rows * shard.num_features);
  }
  if (mpi_size() > 1)
    CHECK_THROWS_WITH(gradsum::fit_global_scaler(shard, aggregation),
                      "gradsum::fit_global_scaler: the ranks' tables have between 12 and 13 "
                      "features; every rank must hold the same columns");
}
