// SPDX-License-Identifier: Apache-2.0
// Checkpoints under MPI: rank 0 writes, every rank loads, a resumed run
// continues the uninterrupted trajectory bit for bit, and a load that
// fails on one rank only fails every rank with that rank's message.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/train/checkpoint.hpp>
#include <gradsum/train/fit.hpp>

#include <mpi.h>
#include <unistd.h>

#include <cstring>

using namespace gradsum_test;
using gradsum::Allreduce;

namespace {

// One file name for every rank: rank 0's process id.
std::string shared_path(const std::string& name) {
  long pid = long(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return "gradsum_mpi_test_" + std::to_string(pid) + "_" + name;
}

template <class Space, class StepType, class Theta, class Data>
gradsum::TrainingPosition run_global(StepType& step, const Theta& theta, const Data& data,
                                     gradsum::TrainingPosition position, std::int64_t steps) {
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(data.num_samples(), 9,
                                                                  position.seed);
  sampler.shuffle(position.epoch);
  for (std::int64_t k = 0; k < steps; ++k) {
    step(theta, data, sampler.batch(position.batch, mpi_size(), mpi_rank()));
    ++position.step;
    if (++position.batch == sampler.num_batches()) {
      position.batch = 0;
      sampler.shuffle(++position.epoch);
    }
  }
  return position;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("MPI: 5 Adam steps, checkpoint, load, 5 steps equal 10 steps bit for bit",
                          Space, mpi_resume) {
  const auto problem = random_problem(31, 3, Kind::multiclass, 3, 41);
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  const std::string path = shared_path("resume.ckpt");
  auto make = [&] {
    return gradsum::make_step<double>(Space(), gradsum::Softmax(3, 3),
                                      gradsum::SoftmaxCrossEntropy{}, gradsum::Adam{0.05},
                                      gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                      Allreduce(MPI_COMM_WORLD));
  };
  gradsum::TrainingPosition start;
  start.seed = 5;
  auto straight = make();
  auto theta_straight = straight.make_parameters();
  run_global<Space>(straight, theta_straight, data, start, 10);

  auto first = make();
  auto theta_first = first.make_parameters();
  const auto middle = run_global<Space>(first, theta_first, data, start, 5);
  gradsum::save_checkpoint(path, first, theta_first, middle);

  auto second = make();
  auto theta_second = second.make_parameters();
  const auto resumed = gradsum::load_checkpoint(path, second, theta_second);
  CHECK(resumed.step == 5);
  CHECK(resumed.epoch == 1);
  CHECK(resumed.batch == 1);  // 31 rows in batches of 9: 4 per epoch
  run_global<Space>(second, theta_second, data, resumed, 5);

  const auto a = to_host(theta_straight), b = to_host(theta_second);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  CHECK(gradsum::read_checkpoint(path).ranks == mpi_size());

  // fit() resuming it with another seed: every rank read the checkpoint,
  // and every rank refuses alike, before any step.
  auto third = make();
  auto theta_third = third.make_parameters();
  gradsum::FitOptions options;
  options.batch = 9;
  options.epochs = 3;
  options.start = gradsum::load_checkpoint(path, third, theta_third);
  options.start_file = path;
  options.seed = 6;
  const std::string expected = "rank 0: gradsum::fit: the checkpoint '" + path +
                               "' (step 5, epoch 1) was written with seed 5, but options.seed "
                               "is 6;";
  CHECK_THROWS_WITH_AS(gradsum::fit(third, theta_third, data, options),
                       doctest::Contains(expected.c_str()), gradsum::Error);
  CHECK(third.aggregation().calls() == 0);  // refused before any step
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == 0) std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(mpi_resume, Spaces);

TEST_CASE("MPI: a checkpoint missing on one rank fails every rank with its message") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const std::string path = shared_path("one_rank.ckpt");
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(2), gradsum::SquaredError{},
                                         gradsum::Adam{}, gradsum::Objective{},
                                         gradsum::Analytic{}, gradsum::Sum{},
                                         Allreduce(MPI_COMM_WORLD));
  auto theta = step.make_parameters();
  gradsum::save_checkpoint(path, step, theta, gradsum::TrainingPosition{});
  // The last rank looks for a file that is not there.
  const int last = mpi_size() - 1;
  const std::string mine = mpi_rank() == last ? path + ".elsewhere" : path;
  std::string message;
  try {
    gradsum::load_checkpoint(mine, step, theta);
  } catch (const gradsum::Error& e) {
    message = e.what();
  }
  CHECK(message.rfind("rank " + std::to_string(last) + ": gradsum::load_checkpoint: cannot open '" +
                          path + ".elsewhere'",
                      0) == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == 0) std::remove(path.c_str());
}
