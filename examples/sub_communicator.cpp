// SPDX-License-Identifier: Apache-2.0
// Training on a sub-communicator: the world's ranks split in pairs with
// MPI_Comm_split (as a simulation code splits its ranks into tasks), and
// each pair trains its own MLP surrogate on its own field, its ranks
// holding half of the rows each. Gradients travel only inside the pair.
// With the reproducible reduction each pair lands on the very parameters
// that one process training on all of the pair's rows reaches; the program
// checks that, bit for bit, and exits with status 1 if not (it links
// gradsum::reproducible, so that both steps' arithmetic rounds alike).
//
//   mpiexec -n 4 build/examples/sub_communicator
#include <gradsum/gradsum.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// 512 samples of the field pair `task` learns: u(x, y) = sin(pi x) cos(pi y)
// scaled by 1 + task, on a grid over [-1, 1]^2 (every rank makes them all).
void make_field(int task, std::vector<double>& x, std::vector<double>& u) {
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 16; ++j) {
      const double a = -1 + 2 * i / 31.0, b = -1 + 2 * j / 15.0;
      x.push_back(a);
      x.push_back(b);
      u.push_back((1 + task) * std::sin(pi * a) * std::cos(pi * b));
    }
}

}  // namespace

int main(int argc, char* argv[]) {
  gradsum::Environment env(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const int task = env.rank() / 2;
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, task, env.rank(), &pair);
  int pair_rank = 0, pair_size = 1;
  MPI_Comm_rank(pair, &pair_rank);
  MPI_Comm_size(pair, &pair_size);

  std::vector<double> x, u;
  make_field(task, x, u);
  const std::int64_t n = std::int64_t(u.size());
  const auto data = gradsum::Dataset<double>::from_host(n, 2, x, u);

  const gradsum::MLP net(2, {16, 16}, 1, gradsum::Activation::tanh);
  const gradsum::Objective objective{0.0, true};  // the mean squared error
  // Allreduce over the pair: the aggregation works on a duplicate of it,
  // so its messages never mix with the program's own on `pair`.
  auto step = gradsum::make_step<double>(Space(), net, gradsum::SquaredError{},
                                         gradsum::Adam{0.01}, objective, gradsum::Analytic{},
                                         gradsum::Reproducible{}, gradsum::Allreduce(pair));
  // The reference: one process, all of the pair's rows, no MPI.
  auto alone = gradsum::make_step<double>(Space(), net, gradsum::SquaredError{},
                                          gradsum::Adam{0.01}, objective, gradsum::Analytic{},
                                          gradsum::Reproducible{});
  auto theta = step.make_parameters();
  auto theta_alone = alone.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::glorot_uniform().with_seed(11), theta);
  Kokkos::deep_copy(theta_alone, theta);

  gradsum::StepResult result;
  for (int epoch = 0; epoch < 300; ++epoch) {  // full batch: one step per epoch
    result = step(theta, data, gradsum::partition(n, pair_size, pair_rank));
    alone(theta_alone, data);
  }

  const auto mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  const auto reference = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta_alone);
  const bool same =
      std::memcmp(mine.data(), reference.data(), mine.size() * sizeof(double)) == 0;
  std::printf("rank %d, task %d (rank %d of %d in its pair): mean squared error %.3g; "
              "parameters %s the one-process run's\n",
              env.rank(), task, pair_rank, pair_size, 2 * result.loss,
              same ? "bit for bit" : "DIFFERENT FROM");
  MPI_Comm_free(&pair);
  return same ? 0 : 1;
}
