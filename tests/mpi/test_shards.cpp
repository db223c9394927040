// SPDX-License-Identifier: Apache-2.0
// Sharded optimizer state (ZeRO stage 1, Allreduce::shard_optimizer) under
// mpiexec with 1 to 4 ranks: every elementwise optimizer gives the bytes of
// the replicated run that sums in rank order (the gradient is
// reduce-scattered in rank order, each rank updates its block, the blocks
// are gathered), and of one MPI_Allreduce on 1 and 2 ranks; each rank
// receives the sums of its block alone and keeps the state of that block; a
// checkpoint holds the whole state, the replicated run's bytes, and resumes
// on fewer ranks with or without sharding; ranks that disagree, and
// optimizers that are not elementwise, are refused on every rank.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/train/checkpoint.hpp>

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace gradsum_test;

namespace shards_test {

// The ranks of `comm`: its size and this rank.
struct Ranks {
  MPI_Comm comm = MPI_COMM_WORLD;
  int size() const {
    int s = 1;
    MPI_Comm_size(comm, &s);
    return s;
  }
  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
  }
};

// The same seeded values in every rank's theta.
template <class View>
void seeded(const View& theta) {
  std::mt19937_64 draw(17);
  std::normal_distribution<double> normal(0.0, 0.3);
  auto host = Kokkos::create_mirror_view(theta);
  for (std::size_t j = 0; j < host.extent(0); ++j) host(j) = normal(draw);
  Kokkos::deep_copy(theta, host);
}

// `steps` steps from `position`, each over one global batch of 7 rows split
// over the ranks of `ranks`.
template <class StepType, class Theta, class Data>
gradsum::TrainingPosition run(StepType& step, const Theta& theta, const Data& data,
                              gradsum::TrainingPosition position, std::int64_t steps,
                              const Ranks& ranks = {}) {
  using Memory = typename StepType::memory_space;
  gradsum::MiniBatchSampler<Memory> sampler(data.num_samples(), 7, position.seed);
  sampler.shuffle(position.epoch);
  for (std::int64_t k = 0; k < steps; ++k) {
    step(theta, data, sampler.batch(position.batch, ranks.size(), ranks.rank()));
    ++position.step;
    if (++position.batch == sampler.num_batches()) {
      position.batch = 0;
      sampler.shuffle(++position.epoch);
    }
  }
  return position;
}

template <class Space>
auto softmax_data() {
  const auto problem = random_problem(40, 4, Kind::multiclass, 3, 23);
  return gradsum::Dataset<double, typename Space::memory_space>::from_host(problem.n, problem.d,
                                                                           problem.x, problem.y);
}

// One bucket of the whole buffer: each element summed in rank order.
const gradsum::Buckets one_bucket{0, std::size_t(1) << 20};

// A Softmax step over `comm`, its optimizer state sharded or not, summed
// in rank order (or as `buckets` say).
template <class Space, class Optimizer>
auto softmax_step(const Optimizer& optimizer, bool shard, MPI_Comm comm = MPI_COMM_WORLD,
                  gradsum::Buckets buckets = one_bucket) {
  gradsum::Allreduce sum(comm, gradsum::DeviceBuffers::automatic, buckets);
  sum.shard_optimizer(shard);
  return gradsum::make_step<double>(Space(), gradsum::Softmax(4, 3),
                                    gradsum::SoftmaxCrossEntropy{}, optimizer,
                                    gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                    sum);
}

// One optimizer's Softmax steps with the state replicated and sharded,
// each with the seeded parameters.
template <class Space, class Optimizer>
struct Twins {
  using StepType = decltype(softmax_step<Space>(std::declval<Optimizer>(), false));
  explicit Twins(const Optimizer& optimizer)
      : whole(softmax_step<Space>(optimizer, false)),
        sharded(softmax_step<Space>(optimizer, true)),
        theta_whole(whole.make_parameters()),
        theta_sharded(sharded.make_parameters()) {
    seeded(theta_whole);
    seeded(theta_sharded);
  }
  StepType whole, sharded;
  typename StepType::parameters_view theta_whole, theta_sharded;
};

bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// The parameters after 9 steps with the state sharded equal those without.
template <class Space, class Optimizer>
void check_same_bits(const Optimizer& optimizer, const char* what) {
  INFO(what << " on " << mpi_size() << " ranks");
  const auto data = softmax_data<Space>();
  gradsum::TrainingPosition start;
  start.seed = 3;
  Twins<Space, Optimizer> twins(optimizer);
  CHECK(twins.sharded.scatters_gradient() == (mpi_size() > 1));
  CHECK_FALSE(twins.whole.scatters_gradient());
  run(twins.whole, twins.theta_whole, data, start, 9);
  run(twins.sharded, twins.theta_sharded, data, start, 9);
  CHECK(same_bytes(to_host(twins.theta_whole), to_host(twins.theta_sharded)));
  if (mpi_size() <= 2) {  // one MPI_Allreduce adds x_0 + x_1 as rank order does
    auto message = softmax_step<Space>(optimizer, false, MPI_COMM_WORLD, gradsum::Buckets{});
    auto theta = message.make_parameters();
    seeded(theta);
    run(message, theta, data, start, 9);
    CHECK(same_bytes(to_host(twins.theta_whole), to_host(theta)));
  }
  // The replicated run moved away from the start: the comparison means something.
  auto theta_start = twins.whole.make_parameters();
  seeded(theta_start);
  CHECK_FALSE(same_bytes(to_host(theta_start), to_host(twins.theta_whole)));
}

std::string shared_path(const std::string& name) {
  long pid = long(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return "gradsum_shards_test_" + std::to_string(pid) + "_" + name;
}

}  // namespace shards_test

using namespace shards_test;

TEST_CASE_TEMPLATE_DEFINE("MPI: sharded optimizer state gives the replicated parameters' bytes",
                          Space, mpi_shards_same_bits) {
  check_same_bits<Space>(gradsum::SGD{0.1}, "sgd");
  check_same_bits<Space>(gradsum::Momentum{0.05}, "momentum");
  check_same_bits<Space>(gradsum::Nesterov{0.05}, "nesterov");
  check_same_bits<Space>(gradsum::AdaGrad{0.1}, "adagrad");
  check_same_bits<Space>(gradsum::RMSProp{0.01}, "rmsprop");
  check_same_bits<Space>(gradsum::Adam{0.05}, "adam");
  check_same_bits<Space>(gradsum::AdamW{0.05}, "adamw");
  check_same_bits<Space>(gradsum::FirstOrder(gradsum::AdamW{0.05}), "first-order adamw");
  // Clipping by the whole gradient's norm (small enough to clip every step).
  check_same_bits<Space>(gradsum::clip_gradient_norm(gradsum::Adam{0.05}, 0.01), "clipped adam");
  check_same_bits<Space>(gradsum::Scheduled<gradsum::Momentum>(gradsum::Momentum{0.05},
                                                                gradsum::Schedule::cosine(9)),
                         "scheduled momentum");
  // Gathered in messages of 2 values (the split every collective makes).
  const std::size_t previous = gradsum::mpi::set_message_elements(2);
  check_same_bits<Space>(gradsum::AdamW{0.05}, "adamw in messages of 2 values");
  gradsum::mpi::set_message_elements(previous);
}
TEST_CASE_TEMPLATE_APPLY(mpi_shards_same_bits, Spaces);

TEST_CASE("MPI: each rank keeps the optimizer state of its block of the parameters alone") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  auto step = softmax_step<Space>(gradsum::Adam{0.05}, true);
  const int P = step.num_parameters();  // 15
  const auto shard = step.optimizer_shard();
  const auto state = step.optimizer_state();
  CHECK(state.extent(0) == 2);
  CHECK(std::int64_t(state.extent(1)) == shard.size());
  // The blocks tile [0, P) in rank order, as even as they can be.
  std::int64_t mine[3] = {shard.size(), -shard.size(), shard.begin}, all[3] = {0, 0, 0};
  MPI_Allreduce(&mine[0], &all[0], 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&mine[0], &all[1], 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine[1], &all[2], 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(all[0] == P);
  CHECK(all[1] + all[2] <= 1);  // largest block minus smallest
  std::int64_t next = shard.end;
  std::int64_t begin_of_next = 0;
  MPI_Request requests[2];
  const int r = mpi_rank(), p = mpi_size();
  MPI_Irecv(&begin_of_next, 1, MPI_INT64_T, r + 1 < p ? r + 1 : MPI_PROC_NULL, 0, MPI_COMM_WORLD,
            &requests[0]);
  std::int64_t begin = shard.begin;
  MPI_Isend(&begin, 1, MPI_INT64_T, r > 0 ? r - 1 : MPI_PROC_NULL, 0, MPI_COMM_WORLD,
            &requests[1]);
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  if (r == 0) CHECK(shard.begin == 0);
  if (r + 1 < p) CHECK(begin_of_next == next);
  else CHECK(shard.end == P);
  // One parameter on several ranks: rank 0's block is all of it, yet every
  // rank counts its block as a part, so that all take the sharded step's
  // collectives (the update's gather, the checkpoint's collection).
  gradsum::Allreduce sum(MPI_COMM_WORLD);
  sum.shard_optimizer();
  CHECK(sum.optimizer_shard(1).partial(1) == (p > 1));
}

TEST_CASE("MPI: a sharded checkpoint holds the whole state and resumes on fewer ranks") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = softmax_data<Space>();
  const gradsum::AdamW adamw{0.05};
  const std::string whole_path = shared_path("whole.ckpt"), sharded_path = shared_path("sharded.ckpt");
  gradsum::TrainingPosition start;
  start.seed = 4;
  Twins<Space, gradsum::AdamW> twins(adamw);
  const auto middle = run(twins.whole, twins.theta_whole, data, start, 5);
  run(twins.sharded, twins.theta_sharded, data, start, 5);
  gradsum::save_checkpoint(whole_path, twins.whole, twins.theta_whole, middle);
  gradsum::save_checkpoint(sharded_path, twins.sharded, twins.theta_sharded, middle);
  MPI_Barrier(MPI_COMM_WORLD);
  // The same file contents but for nothing: state, parameters, position.
  const auto a = gradsum::read_checkpoint(whole_path), b = gradsum::read_checkpoint(sharded_path);
  CHECK(a.state_rows == 2);
  CHECK(a.state_bytes.size() == 2 * std::size_t(twins.whole.num_parameters()) * sizeof(double));
  CHECK(a.state_bytes == b.state_bytes);
  CHECK(a.parameter_bytes == b.parameter_bytes);
  CHECK(a.optimizer_host == b.optimizer_host);

  // Resumed on the first max(1, p - 1) ranks, sharded and not: the same
  // continuation.
  const int fewer = std::max(1, mpi_size() - 1);
  Ranks sub;
  MPI_Comm_split(MPI_COMM_WORLD, mpi_rank() < fewer ? 0 : MPI_UNDEFINED, mpi_rank(), &sub.comm);
  if (sub.comm != MPI_COMM_NULL) {
    std::vector<double> continued[2];
    for (int shard = 0; shard < 2; ++shard) {
      auto step = softmax_step<Space>(adamw, shard == 1, sub.comm);
      auto theta = step.make_parameters();
      const auto resumed = gradsum::load_checkpoint(sharded_path, step, theta);
      CHECK(resumed.step == 5);
      run(step, theta, data, resumed, 4, sub);
      continued[shard] = to_host(theta);
    }
    CHECK(same_bytes(continued[0], continued[1]));
    CHECK_FALSE(same_bytes(continued[0], to_host(twins.theta_whole)));
    MPI_Comm_free(&sub.comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == 0) {
    std::remove(whole_path.c_str());
    std::remove(sharded_path.c_str());
  }
}

TEST_CASE("MPI: sharding refused alike on every rank: ranks that disagree, an L-BFGS") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  if (mpi_size() > 1) {
    CHECK_THROWS_WITH_AS(softmax_step<Space>(gradsum::Adam{}, mpi_rank() == 0),
                         doctest::Contains("whether the optimizer state is sharded"),
                         gradsum::AgreedError);
  }
  CHECK_THROWS_WITH_AS(softmax_step<Space>(gradsum::LBFGS{}, true),
                       doctest::Contains("rank 0: gradsum::Step: the lbfgs optimizer does not "
                                         "update each parameter from its own gradient"),
                       gradsum::AgreedError);
  // Then a sharded step still runs on every rank.
  const auto data = softmax_data<Space>();
  auto step = softmax_step<Space>(gradsum::Adam{0.05}, true);
  auto theta = step.make_parameters();
  CHECK(run(step, theta, data, {}, 2).step == 2);
}

TEST_CASE("MPI: a sharded training step receives the summed gradient of its block alone") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = softmax_data<Space>();
  Twins<Space, gradsum::Adam> twins(gradsum::Adam{0.05});
  gradsum::MiniBatchSampler<Space::memory_space> sampler(data.num_samples(), 7, 5);
  const auto rows = sampler.batch(0, mpi_size(), mpi_rank());
  // The replicated step's gradient of J at the seeded parameters.
  const auto whole = twins.whole.evaluate(twins.theta_whole, data, rows);
  const auto g_whole = to_host(twins.whole.gradient());
  // A training step, reduce-scattered: its block holds the same bits, and
  // the norm (gathered from every block's parts) is the same.
  const auto trained = twins.sharded(twins.theta_sharded, data, rows);
  CHECK(trained.gradient_norm == whole.gradient_norm);
  CHECK(trained.loss == whole.loss);
  const auto shard = twins.sharded.optimizer_shard();
  const auto g_block = to_host(twins.sharded.gradient());
  bool same = true;
  for (auto j = shard.begin; j < shard.end; ++j)
    same = same && g_block[std::size_t(j)] == g_whole[std::size_t(j)];
  CHECK(same);
  // evaluate() still sums the whole gradient on every rank.
  seeded(twins.theta_sharded);
  const auto evaluated = twins.sharded.evaluate(twins.theta_sharded, data, rows);
  CHECK(evaluated.gradient_norm == whole.gradient_norm);
  CHECK(same_bytes(to_host(twins.sharded.gradient()), g_whole));
}

TEST_CASE("MPI: a sharded MLP sent in buckets during its backward pass keeps the bytes") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto problem = random_problem(64, 6, Kind::multiclass, 3, 29);
  const auto data = gradsum::Dataset<double, Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  std::vector<double> theta_of[2];
  for (int shard = 0; shard < 2; ++shard) {
    gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                           gradsum::Buckets{5, 40});
    sum.shard_optimizer(shard == 1);
    auto step = gradsum::make_step<double>(
        Space(), gradsum::MLP(6, {16, 8}, 3), gradsum::SoftmaxCrossEntropy{},
        gradsum::AdamW{0.02}, gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{}, sum);
    auto theta = step.make_parameters();
    seeded(theta);
    gradsum::TrainingPosition start;
    start.seed = 8;
    run(step, theta, data, start, 6);
    theta_of[shard] = to_host(theta);
  }
  CHECK(same_bytes(theta_of[0], theta_of[1]));
}
