// SPDX-License-Identifier: Apache-2.0
// mpi::accuracy, mpi::mean_loss and mpi::regression_scores over shards
// (1-4 ranks under mpiexec): the values of the whole data set computed on
// the host, and the same refusal on every rank when one rank's input is bad.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>

using namespace gradsum_test;

namespace {

// This rank's contiguous part of p's rows, as a Dataset in Memory.
template <class Memory>
gradsum::Dataset<double, Memory> shard(const HostProblem& p, int width = -1) {
  const auto rows = gradsum::partition(p.n, mpi_size(), mpi_rank());
  const int d = width < 0 ? p.d : width;
  std::vector<double> x, y;
  for (std::int64_t i = rows.begin; i < rows.end; ++i) {
    for (int j = 0; j < d; ++j) x.push_back(j < p.d ? p.x[std::size_t(i * p.d + j)] : 0.0);
    y.push_back(p.y[std::size_t(i)]);
  }
  return gradsum::Dataset<double, Memory>::from_host(rows.size(), d, x, y);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("mpi::accuracy and mpi::mean_loss cover every rank's shard", Space,
                          mpi_metrics) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const gradsum::Softmax model(3, 4);
  const gradsum::SoftmaxCrossEntropy loss;
  const auto theta_values = random_vector(16, 4);
  Kokkos::View<double*, Memory> theta("theta", 16);
  fill(theta, theta_values);
  // 3 rows leave a rank without rows at 4 ranks.
  for (std::int64_t n : {3, 61}) {
    CAPTURE(n);
    const auto p = random_problem(n, 3, Kind::multiclass, 4, 19);
    // The whole data set on the host: softmax logits, argmax, log-sum-exp.
    double correct = 0, total = 0, weights = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double z[4];
      for (int c = 0; c < 4; ++c) {
        z[c] = theta_values[std::size_t(c * 4 + 3)];
        for (int j = 0; j < 3; ++j)
          z[c] += theta_values[std::size_t(c * 4 + j)] * p.x[std::size_t(i * 3 + j)];
      }
      const int label = int(p.y[std::size_t(i)]);
      const int best = int(std::max_element(z, z + 4) - z);
      correct += best == label ? 1 : 0;
      double s = 0;
      for (double v : z) s += std::exp(v - z[best]);
      total += z[best] + std::log(s) - z[label];
    }
    for (int c = 0; c < 4; ++c)
      for (int j = 0; j < 3; ++j) weights += std::pow(theta_values[std::size_t(c * 4 + j)], 2);
    const auto data = shard<Memory>(p);
    CHECK(gradsum::mpi::accuracy(Space(), comm, model, loss, theta, data) ==
          doctest::Approx(correct / double(n)).epsilon(1e-15));
    CHECK(gradsum::mpi::mean_loss(Space(), comm, model, loss, theta, data) ==
          doctest::Approx(total / double(n)).epsilon(1e-13));
    CHECK(gradsum::mpi::mean_loss(Space(), comm, model, loss, theta, data,
                                  gradsum::Objective{0.2}) ==
          doctest::Approx(total / double(n) + 0.1 * weights).epsilon(1e-13));
    CHECK(gradsum::mpi::mean_loss(Space(), comm, model, loss, theta, data,
                                  gradsum::Objective{0, false}) ==
          doctest::Approx(total).epsilon(1e-13));
  }
}
TEST_CASE_TEMPLATE_APPLY(mpi_metrics, Spaces);

TEST_CASE_TEMPLATE_DEFINE("mpi metrics: one rank's bad input fails every rank alike", Space,
                          mpi_metrics_refusals) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const int last = mpi_size() - 1;
  const gradsum::Softmax model(3, 4);
  const gradsum::SoftmaxCrossEntropy loss;
  Kokkos::View<double*, Memory> theta("theta", 16);
  fill(theta, random_vector(16, 4));
  auto p = random_problem(40, 3, Kind::multiclass, 4, 23);
  // Only the last rank's shard is one column too wide.
  const auto data = shard<Memory>(p, mpi_rank() == last ? 4 : 3);
  const std::string misfit = " do not fit model softmax (3 features, 16 parameters)";
  CHECK_THROWS_WITH_AS(gradsum::mpi::accuracy(Space(), comm, model, loss, theta, data),
                       ("gradsum::mpi::accuracy: the data or theta of 1 of " +
                        std::to_string(mpi_size()) + " rank(s)" + misfit).c_str(),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::mpi::mean_loss(Space(), comm, model, loss, theta, data),
                       ("gradsum::mpi::mean_loss: the data or theta of 1 of " +
                        std::to_string(mpi_size()) + " rank(s)" + misfit).c_str(),
                       gradsum::Error);
  // A class the model does not have, in the last row (the last rank's).
  p.y.back() = 7;
  CHECK_THROWS_WITH_AS(gradsum::mpi::mean_loss(Space(), comm, model, loss, theta, shard<Memory>(p)),
                       "gradsum::mpi::mean_loss: 1 row(s) over the ranks have a target the loss "
                       "softmax_cross_entropy rejects for 4 output(s)",
                       gradsum::Error);
  const auto none = gradsum::Dataset<double, Memory>::from_host(0, 3, {}, {});
  CHECK_THROWS_WITH_AS(gradsum::mpi::accuracy(Space(), comm, model, loss, theta, none),
                       "gradsum::mpi::accuracy: no rank holds a row", gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(mpi_metrics_refusals, Spaces);

TEST_CASE_TEMPLATE_DEFINE("mpi::regression_scores covers every rank's shard", Space,
                          mpi_regression_scores) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const gradsum::Linear model(3);
  const auto theta_values = random_vector(4, 6);
  Kokkos::View<double*, Memory> theta("theta", 4);
  fill(theta, theta_values);
  for (std::int64_t n : {3, 61}) {
    CAPTURE(n);
    auto p = random_problem(n, 3, Kind::regression, 0, 29);
    for (auto& y : p.y) y += 1e6;  // far from zero: the mean is taken first
    // The whole data set on the host, in long double.
    long double mean = 0, residuals = 0, deviations = 0;
    for (double y : p.y) mean += y;
    mean /= n;
    for (std::int64_t i = 0; i < n; ++i) {
      long double z = theta_values[3] + 1e6;
      for (int j = 0; j < 3; ++j) z += (long double)theta_values[std::size_t(j)] * p.x[std::size_t(i * 3 + j)];
      residuals += (z - p.y[std::size_t(i)]) * (z - p.y[std::size_t(i)]);
      deviations += (p.y[std::size_t(i)] - mean) * (p.y[std::size_t(i)] - mean);
    }
    Kokkos::View<double*, Memory> shifted("shifted", 4);
    auto values = theta_values;
    values[3] += 1e6;
    fill(shifted, values);
    const auto s = gradsum::mpi::regression_scores(Space(), comm, model, shifted, shard<Memory>(p));
    CHECK(s.rows == n);
    CHECK(s.rmse == doctest::Approx(double(std::sqrt(residuals / n))).epsilon(1e-9));
    CHECK(s.r2 == doctest::Approx(double(1 - residuals / deviations)).epsilon(1e-9));
  }
  // Only the last rank's shard is one column too wide: every rank refuses.
  const auto p = random_problem(40, 3, Kind::regression, 0, 23);
  const auto wide = shard<Memory>(p, mpi_rank() == mpi_size() - 1 ? 4 : 3);
  CHECK_THROWS_WITH_AS(gradsum::mpi::regression_scores(Space(), comm, model, theta, wide),
                       ("gradsum::mpi::regression_scores: the data or theta of 1 of " +
                        std::to_string(mpi_size()) +
                        " rank(s) do not fit model linear (3 features, 1 output(s), 4 "
                        "parameters; one output is scored)").c_str(),
                       gradsum::Error);
  const auto none = gradsum::Dataset<double, Memory>::from_host(0, 3, {}, {});
  CHECK_THROWS_WITH_AS(gradsum::mpi::regression_scores(Space(), comm, model, theta, none),
                       "gradsum::mpi::regression_scores: no rank holds a row", gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(mpi_regression_scores, Spaces);
