// SPDX-License-Identifier: Apache-2.0
// Cross-process summation: run by ctest under mpiexec with 1, 2, 3 and 4
// ranks. Every expected value is computed in the same process by the
// single-process (Local) step or by hand.

#include "../test_helpers.hpp"

#include <mpi.h>

#include <cstring>
#include <random>

using namespace gradsum_test;
using gradsum::Allreduce;
using gradsum::BinaryCrossEntropy;
using gradsum::Linear;
using gradsum::RowRange;
using gradsum::Softmax;
using gradsum::SoftmaxCrossEntropy;
using gradsum::SquaredError;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

template <class Space, class Scalar>
using Data = gradsum::Dataset<Scalar, typename Space::memory_space>;

// Rows [begin, end) of a host problem as their own data set (a shard).
HostProblem shard(const HostProblem& p, RowRange rows) {
  HostProblem s;
  s.n = rows.size();
  s.d = p.d;
  s.x.assign(p.x.begin() + rows.begin * p.d, p.x.begin() + rows.end * p.d);
  s.y.assign(p.y.begin() + rows.begin, p.y.begin() + rows.end);
  return s;
}

template <class Space, class Model, class Loss>
void check_against_single_process(const Model& model, const Loss& loss, Kind kind,
                                  std::int64_t n, std::uint64_t seed) {
  const auto problem = random_problem(n, model.num_features(), kind, model.num_outputs(), seed);
  const auto data = Data<Space, double>::from_host(problem.n, problem.d, problem.x, problem.y);
  const gradsum::Objective objective{0.1, true};
  auto local = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{}, objective);
  auto theta = local.make_parameters();
  fill(theta, random_vector(theta.extent(0), seed + 1));
  const auto expected = local.evaluate(theta, data);
  const auto expected_gradient = to_host(local.gradient());

  auto distributed = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{}, objective,
                                                gradsum::Analytic{}, gradsum::Sum{},
                                                Allreduce(MPI_COMM_WORLD));
  const auto mine = gradsum::partition(n, world_size(), world_rank());
  INFO(model.name() << " x " << loss.name() << ", n = " << n << ", ranks = " << world_size()
                    << ", my rows [" << mine.begin << ", " << mine.end << ")");

  // Global mode: every rank holds every sample and evaluates its part.
  const auto global = distributed.evaluate(theta, data, mine);
  CHECK(global.count == n);
  CHECK(relative_distance(to_host(distributed.gradient()), expected_gradient,
                          expected_gradient.size()) <= 1e-12);
  CHECK(global.loss == doctest::Approx(expected.loss).epsilon(1e-12));
  CHECK(global.gradient_norm == doctest::Approx(expected.gradient_norm).epsilon(1e-12));

  // Sharded mode: every rank holds only its own rows.
  const auto part = shard(problem, mine);
  const auto my_data = Data<Space, double>::from_host(part.n, part.d, part.x, part.y);
  const auto sharded = distributed.evaluate(theta, my_data);
  CHECK(sharded.count == n);
  CHECK(relative_distance(to_host(distributed.gradient()), expected_gradient,
                          expected_gradient.size()) <= 1e-12);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("textbook across ranks: +0.5 and -0.2 sum to 0.3", Space, textbook) {
  // Rank 0 holds (x = 1, y = -0.5), rank 1 (x = 1, y = 0.2): at theta = 0
  // squared error gives them gradients +0.5 and -0.2. Further ranks hold
  // nothing; a single rank holds both samples.
  std::vector<double> x, y;
  if (world_rank() == 0) x.push_back(1.0), y.push_back(-0.5);
  if (world_rank() == 1 || world_size() == 1) x.push_back(1.0), y.push_back(0.2);
  const auto data = Data<Space, double>::from_host(std::int64_t(y.size()), 1, x, y);
  auto step = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         gradsum::Sum{}, Allreduce(MPI_COMM_WORLD));
  auto theta = step.make_parameters();
  const auto result = step.evaluate(theta, data);
  const auto sums = to_host(step.sums());
  CHECK(sums[0] == doctest::Approx(0.3).epsilon(1e-15));
  CHECK(result.count == 2);
  CHECK(step.aggregation().calls() == 1);  // one message per step
}
TEST_CASE_TEMPLATE_APPLY(textbook, Spaces);

TEST_CASE_TEMPLATE_DEFINE("allreduced gradient equals the single-process gradient", Space,
                          equals_single) {
  // 97 rows: uneven parts; 10 rows: 4,3,3 on 3 ranks and 3,3,2,2 on 4;
  // 2 rows: two of four ranks hold nothing.
  for (std::int64_t n : {97, 10, 2}) {
    check_against_single_process<Space>(Linear(4), SquaredError{}, Kind::regression, n, 3);
    check_against_single_process<Space>(Linear(4), BinaryCrossEntropy{}, Kind::binary, n, 4);
    check_against_single_process<Space>(Softmax(3, 4), SoftmaxCrossEntropy{}, Kind::multiclass,
                                        n, 5);
  }
}
TEST_CASE_TEMPLATE_APPLY(equals_single, Spaces);

TEST_CASE_TEMPLATE_DEFINE("global sampling: 20 SGD steps follow the single-process run", Space,
                          global_sampling) {
  using Memory = typename Space::memory_space;
  const auto problem = random_problem(45, 3, Kind::multiclass, 3, 17);
  const auto data = Data<Space, double>::from_host(problem.n, problem.d, problem.x, problem.y);
  const gradsum::Objective objective{0.01, true};
  auto local = gradsum::make_step<double>(Space(), Softmax(3, 3), SoftmaxCrossEntropy{},
                                          gradsum::SGD{0.3}, objective);
  auto distributed = gradsum::make_step<double>(
      Space(), Softmax(3, 3), SoftmaxCrossEntropy{}, gradsum::SGD{0.3}, objective,
      gradsum::Analytic{}, gradsum::Sum{}, Allreduce(MPI_COMM_WORLD));
  auto theta_local = local.make_parameters();
  auto theta_distributed = distributed.make_parameters();
  gradsum::MiniBatchSampler<Memory> sampler(problem.n, 7, 99);
  int steps = 0;
  for (std::int64_t epoch = 0; steps < 20; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t b = 0; b < sampler.num_batches() && steps < 20; ++b, ++steps) {
      local(theta_local, data, sampler.batch(b));
      distributed(theta_distributed, data, sampler.batch(b, world_size(), world_rank()));
    }
  }
  const auto a = to_host(theta_distributed);
  const auto b = to_host(theta_local);
  INFO("ranks = " << world_size());
  CHECK(relative_distance(a, b, a.size()) <= 1e-10);
  CHECK(distributed.aggregation().calls() == 20);
}
TEST_CASE_TEMPLATE_APPLY(global_sampling, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a rank that disagrees fails every rank, none hangs", Space, mismatch) {
  const int rank = world_rank(), size = world_size();
  SUBCASE("a model of another width on the last rank") {
    const int width = (size > 1 && rank == size - 1) ? 5 : 4;
    if (size > 1) {
      CHECK_THROWS_WITH_AS(
          gradsum::make_step<double>(Space(), Linear(width), SquaredError{}, gradsum::SGD{},
                                     gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                     Allreduce(MPI_COMM_WORLD)),
          doctest::Contains("ranks built different steps (number of parameters ranges from 5 "
                            "to 6; number of features ranges from 4 to 5)"),
          gradsum::Error);
    }
  }
  SUBCASE("a bad learning rate on the last rank") {
    const double lr = rank == size - 1 ? -1.0 : 0.1;
    const std::string expected = "rank " + std::to_string(size - 1) +
                                 ": gradsum::SGD: learning rate lr must be positive";
    CHECK_THROWS_WITH_AS(
        gradsum::make_step<double>(Space(), Linear(4), SquaredError{}, gradsum::SGD{lr},
                                   gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                   Allreduce(MPI_COMM_WORLD)),
        doctest::Contains(expected.c_str()), gradsum::Error);
  }
  SUBCASE("parameters of the wrong length on the last rank") {
    const auto problem = random_problem(8, 4, Kind::regression, 1, 1);
    const auto data = Data<Space, double>::from_host(problem.n, problem.d, problem.x, problem.y);
    auto step = gradsum::make_step<double>(Space(), Linear(4), SquaredError{}, gradsum::SGD{},
                                           gradsum::Objective{}, gradsum::Analytic{},
                                           gradsum::Sum{}, Allreduce(MPI_COMM_WORLD));
    Kokkos::View<double*, typename Space::memory_space> theta(
        "theta", rank == size - 1 ? 3 : 5);
    const std::string expected = "rank " + std::to_string(size - 1) +
                                 ": gradsum::Step::evaluate: theta has 3 entries";
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data), doctest::Contains(expected.c_str()),
                         gradsum::Error);
    // The step is still usable afterwards, on every rank.
    auto good = step.make_parameters();
    CHECK(step.evaluate(good, data, gradsum::partition(8, size, rank)).count == 8);
  }
  SUBCASE("an invalid target on one rank's shard") {
    std::vector<double> y{0, 1};
    if (rank == size - 1) y[1] = 7;  // not a class of a 3-class softmax
    const auto data = Data<Space, double>::from_host(2, 1, {0.5, 1.5}, y);
    auto step = gradsum::make_step<double>(Space(), Softmax(1, 3), SoftmaxCrossEntropy{},
                                           gradsum::SGD{}, gradsum::Objective{},
                                           gradsum::Analytic{}, gradsum::Sum{},
                                           Allreduce(MPI_COMM_WORLD));
    auto theta = step.make_parameters();
    const std::string expected = "rank " + std::to_string(size - 1) +
                                 ": gradsum::Step::evaluate: row 1 of the data";
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data), doctest::Contains(expected.c_str()),
                         gradsum::Error);
  }
}
TEST_CASE_TEMPLATE_APPLY(mismatch, Spaces);

TEST_CASE("Allreduce works on a communicator other than MPI_COMM_WORLD") {
  using Space = Kokkos::DefaultExecutionSpace;
  // Split the world into even and odd ranks; each half sums its own ranks.
  MPI_Comm half;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, world_rank(), &half) == MPI_SUCCESS);
  const double r = world_rank();
  const auto data = Data<Space, double>::from_host(1, 1, {1.0}, {-r});
  auto step = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         gradsum::Sum{}, Allreduce(half));
  auto theta = step.make_parameters();
  step.evaluate(theta, data);
  double expected = 0;  // sum of the ranks of my parity
  for (int q = world_rank() % 2; q < world_size(); q += 2) expected += q;
  CHECK(to_host(step.sums())[0] == doctest::Approx(expected));
  MPI_Comm_free(&half);
}

namespace {

// 12 steps of `optimizer` on full or mini-batches, distributed over the
// world and in one process; returns the relative distance of the results.
template <class Space, class Optimizer>
double trajectory_distance(const Optimizer& optimizer, std::int64_t batch) {
  using Memory = typename Space::memory_space;
  const auto problem = random_problem(60, 3, Kind::binary, 2, 23);
  const auto data = Data<Space, double>::from_host(problem.n, problem.d, problem.x, problem.y);
  const gradsum::Objective objective{0.05, true};
  auto local = gradsum::make_step<double>(Space(), Linear(3), BinaryCrossEntropy{}, optimizer,
                                          objective);
  auto distributed = gradsum::make_step<double>(Space(), Linear(3), BinaryCrossEntropy{},
                                                optimizer, objective, gradsum::Analytic{},
                                                gradsum::Sum{}, Allreduce(MPI_COMM_WORLD));
  auto a = local.make_parameters();
  auto b = distributed.make_parameters();
  gradsum::MiniBatchSampler<Memory> sampler(problem.n, batch, 7);
  int steps = 0;
  for (std::int64_t epoch = 0; steps < 12; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t k = 0; k < sampler.num_batches() && steps < 12; ++k, ++steps) {
      local(a, data, sampler.batch(k));
      distributed(b, data, sampler.batch(k, world_size(), world_rank()));
    }
  }
  const auto ha = to_host(a), hb = to_host(b);
  return relative_distance(hb, ha, ha.size());
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("every optimizer follows the same trajectory on any rank count",
                          Space, optimizer_trajectories) {
  INFO("ranks = " << world_size());
  CHECK(trajectory_distance<Space>(gradsum::SGD{0.5}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::Momentum{0.2, 0.9}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::Nesterov{0.2, 0.9}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::AdaGrad{0.2}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::RMSProp{0.01}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::Adam{0.05}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::AdamW{}, 9) <= 1e-10);
  CHECK(trajectory_distance<Space>(
            gradsum::Scheduled<gradsum::SGD>(gradsum::SGD{0.5}, gradsum::Schedule::cosine(12)),
            9) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::Newton{}, 0) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::SteepestDescent{}, 0) <= 1e-10);
  CHECK(trajectory_distance<Space>(gradsum::LBFGS{}, 0) <= 1e-10);
}
TEST_CASE_TEMPLATE_APPLY(optimizer_trajectories, Spaces);

TEST_CASE_TEMPLATE_DEFINE("reproducible: the same bits on any number of ranks", Space,
                          reproducible_ranks) {
  using Memory = typename Space::memory_space;
  // Magnitudes from 1e-8 to 1e8 with heavy cancellation in the targets.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-8, 8);
  const std::int64_t n = 103;
  const int d = 4;
  std::vector<double> x, y;
  for (std::int64_t i = 0; i < n * d; ++i) x.push_back(unit(rng) * std::pow(10.0, decade(rng)));
  for (std::int64_t i = 0; i < n; ++i)
    y.push_back((i % 2 ? 1.0 : -1.0) * 1e8 + unit(rng) * std::pow(10.0, decade(rng)));
  const auto data = Data<Space, double>::from_host(n, d, x, y);
  const gradsum::Objective objective{0.01, true};
  auto local = gradsum::make_step<double>(Space(), Linear(d), SquaredError{}, gradsum::SGD{1e-17},
                                          objective, gradsum::Analytic{}, gradsum::Reproducible{});
  auto distributed = gradsum::make_step<double>(
      Space(), Linear(d), SquaredError{}, gradsum::SGD{1e-17}, objective, gradsum::Analytic{},
      gradsum::Reproducible{}, Allreduce(MPI_COMM_WORLD));
  auto a = local.make_parameters();
  auto b = distributed.make_parameters();
  fill(a, random_vector(5, 8, 1e-3));
  fill(b, random_vector(5, 8, 1e-3));
  INFO("ranks = " << world_size());

  const auto whole = local.evaluate(a, data);
  const auto mine = distributed.evaluate(b, data, gradsum::partition(n, world_size(), world_rank()));
  auto bits = [](const auto& view) {
    const auto h = to_host(view);
    std::vector<unsigned char> bytes(h.size() * sizeof(double));
    std::memcpy(bytes.data(), h.data(), bytes.size());
    return bytes;
  };
  CHECK(bits(distributed.gradient()) == bits(local.gradient()));
  CHECK(bits(distributed.sums()) == bits(local.sums()));
  CHECK(std::memcmp(&mine.loss, &whole.loss, sizeof(double)) == 0);
  CHECK(std::memcmp(&mine.gradient_norm, &whole.gradient_norm, sizeof(double)) == 0);

  // A 20-step run with mini-batches of 9 lands on the same bits.
  gradsum::MiniBatchSampler<Memory> sampler(n, 9, 3);
  int steps = 0;
  for (std::int64_t epoch = 0; steps < 20; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t k = 0; k < sampler.num_batches() && steps < 20; ++k, ++steps) {
      local(a, data, sampler.batch(k));
      distributed(b, data, sampler.batch(k, world_size(), world_rank()));
    }
  }
  CHECK(bits(a) == bits(b));
}
TEST_CASE_TEMPLATE_APPLY(reproducible_ranks, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a non-finite gradient on one rank: every rank throws or skips", Space,
                          nonfinite_rank) {
  // Each rank holds two rows; the last rank's second row overflows z.
  const int last = world_size() - 1;
  std::vector<double> x{1, 2, 3, 4};
  if (world_rank() == last) x = {1, 2, 1e308, 1e308};
  const auto data = Data<Space, double>::from_host(2, 2, x, {0, 1});
  for (auto action : {gradsum::NonFinite::throw_error, gradsum::NonFinite::skip}) {
    for (int reproducible = 0; reproducible < 2; ++reproducible) {
      INFO("skip = " << (action == gradsum::NonFinite::skip) << ", reproducible = " << reproducible);
      auto check = [&](auto reduction) {
        auto step = gradsum::make_step<double>(
            Space(), Linear(2), BinaryCrossEntropy{}, gradsum::SGD{0.1},
            gradsum::Objective{0, true, action}, gradsum::Analytic{}, reduction,
            Allreduce(MPI_COMM_WORLD));
        auto theta = step.make_parameters();
        fill(theta, {10.0, 10.0, 0.0});
        if (action == gradsum::NonFinite::throw_error) {
          const std::string expected = "rank " + std::to_string(last) +
                                       ": gradsum::Step::evaluate: the loss or its gradient is "
                                       "not finite for sample 1 of the selected rows";
          CHECK_THROWS_WITH_AS(step(theta, data), doctest::Contains(expected.c_str()),
                               gradsum::Error);
        } else {
          CHECK(step(theta, data).skipped);
          CHECK(to_host(theta) == std::vector<double>{10.0, 10.0, 0.0});
        }
      };
      if (reproducible) check(gradsum::Reproducible{});
      else check(gradsum::Sum{});
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(nonfinite_rank, Spaces);
