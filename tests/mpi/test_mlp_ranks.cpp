// SPDX-License-Identifier: Apache-2.0
// The MLP across ranks (1-4 under mpiexec): the allreduced gradient equals
// the single-process gradient on the layer-wise and per-sample paths,
// and digits trained on N ranks land on the very parameters of the
// single-process run.

#include "../digits.hpp"
#include "../test_helpers.hpp"

#include <mpi.h>

#include <cstring>

using namespace gradsum_test;
using gradsum::Activation;
using gradsum::Allreduce;
using gradsum::Initializer;
using gradsum::MLP;

namespace {

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int size_of(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("MLP: the allreduced gradient is the single-process gradient", Space,
                          mlp_ranks_gradient) {
  const int ranks = size_of(MPI_COMM_WORLD), rank = rank_of(MPI_COMM_WORLD);
  const std::int64_t n = 53;
  const auto problem = random_problem(n, 6, Kind::multiclass, 4, 77);
  const auto data =
      gradsum::Dataset<double, typename Space::memory_space>::from_host(n, 6, problem.x, problem.y);
  for (int path = 0; path < 2; ++path) {
    MLP net(6, {9, 7}, 4, std::vector<Activation>{Activation::relu, Activation::tanh});
    net.layerwise = path == 0;
    const gradsum::Objective objective{0.05, true};
    auto local = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                            gradsum::SGD{}, objective);
    auto distributed = gradsum::make_step<double>(
        Space(), net, gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{}, objective,
        gradsum::Analytic{}, gradsum::Sum{}, Allreduce(MPI_COMM_WORLD));
    auto theta = local.make_parameters();
    gradsum::initialize(net, Initializer::he_normal().with_seed(3), theta);
    const auto expected = local.evaluate(theta, data);
    const auto expected_gradient = to_host(local.gradient());
    const auto r = distributed.evaluate(theta, data, gradsum::partition(n, ranks, rank));
    INFO("ranks = " << ranks << ", path "
                    << (path == 0 ? "layer-wise" : "per sample"));
    CHECK(r.count == n);
    CHECK(relative_distance(to_host(distributed.gradient()), expected_gradient,
                            expected_gradient.size()) <= 1e-12);
    CHECK(r.loss == doctest::Approx(expected.loss).epsilon(1e-12));
  }
}
TEST_CASE_TEMPLATE_APPLY(mlp_ranks_gradient, Spaces);

TEST_CASE("digits on N ranks: the parameters of the 1-rank run, bit for bit, and 95% held out") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Data = gradsum::Dataset<double, Space::memory_space>;
  const int ranks = size_of(MPI_COMM_WORLD), rank = rank_of(MPI_COMM_WORLD);
  const auto [train_table, test_table] = standardized_digits();
  const auto train = Data::from_host(std::int64_t(train_table.num_rows), 64, train_table.features,
                                     train_table.targets);
  const auto test = Data::from_host(std::int64_t(test_table.num_rows), 64, test_table.features,
                                    test_table.targets);
  const MLP net(64, {32}, 10, Activation::tanh);
  const gradsum::Objective objective{1e-4, true};
  // Reproducible summation makes the sums, and so the whole trajectory,
  // independent of how the batch is cut across ranks.
  auto single = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                           gradsum::Adam{0.01}, objective, gradsum::Analytic{},
                                           gradsum::Reproducible{});
  auto distributed = gradsum::make_step<double>(
      Space(), net, gradsum::SoftmaxCrossEntropy{}, gradsum::Adam{0.01}, objective,
      gradsum::Analytic{}, gradsum::Reproducible{}, Allreduce(MPI_COMM_WORLD));
  auto theta_single = single.make_parameters();
  auto theta_distributed = distributed.make_parameters();
  gradsum::initialize(net, Initializer::glorot_uniform().with_seed(7), theta_single);
  gradsum::initialize(net, Initializer::glorot_uniform().with_seed(7), theta_distributed);
  gradsum::MiniBatchSampler<Space::memory_space> sampler(train.num_samples(), 64, 7);
  for (int epoch = 0; epoch < 10; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
      // Every rank runs the single-process reference on the whole batch.
      single(theta_single, train, sampler.batch(b));
      distributed(theta_distributed, train, sampler.batch(b, ranks, rank));
    }
  }
  const auto a = to_host(theta_distributed), b = to_host(theta_single);
  INFO("ranks = " << ranks);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  const auto correct =
      gradsum::count_correct(Space(), net, gradsum::SoftmaxCrossEntropy{}, theta_distributed, test);
  const double accuracy = double(correct) / double(test.num_samples());
  if (rank == 0) MESSAGE("digits on " << ranks << " ranks: held-out accuracy " << accuracy);
  CHECK(accuracy >= 0.95);
}
