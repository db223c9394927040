// SPDX-License-Identifier: Apache-2.0
// mpi::suspect_rows (1-4 ranks under mpiexec): every rank scores its part
// of the rows; the merged list is the one gradsum::suspect_rows gives
// over all rows in one process, ties included, and refusals reach every
// rank alike.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <mpi.h>

using namespace gradsum_test;

TEST_CASE_TEMPLATE_DEFINE("mpi::suspect_rows: the same suspects for any number of ranks", Space,
                          mpi_suspects) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const gradsum::Softmax model(3, 4);
  const gradsum::SoftmaxCrossEntropy loss;
  Kokkos::View<double*, Memory> theta("theta", 16);
  // 3 rows leave a rank without rows at 4 ranks; 61 rows, repeated once,
  // hold equal scores that only the row order breaks.
  for (std::int64_t n : {3, 61}) {
    CAPTURE(n);
    auto p = random_problem(n, 3, Kind::multiclass, 4, 23);
    p.x.insert(p.x.end(), p.x.begin(), p.x.end());
    p.y.insert(p.y.end(), p.y.begin(), p.y.end());
    p.n *= 2;
    const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
    auto whole = gradsum::margin_history(Space(), model, loss, theta, data);
    auto mine = gradsum::margin_history(
        Space(), model, loss, theta, data, gradsum::partition(p.n, mpi_size(), mpi_rank()));
    for (std::uint64_t seed : {5, 6, 7}) {
      fill(theta, random_vector(16, seed));
      whole.record();
      mine.record();
    }
    for (std::int64_t k : {std::int64_t(1), std::int64_t(5), p.n}) {
      if (k > p.n) continue;
      CAPTURE(k);
      const auto expected = gradsum::suspect_rows(whole, k);
      const auto merged = gradsum::mpi::suspect_rows(comm, mine, k);
      REQUIRE(merged.size() == expected.size());
      for (std::size_t i = 0; i < merged.size(); ++i) {
        CHECK(merged[i].row == expected[i].row);
        CHECK(merged[i].score == expected[i].score);
        CHECK(merged[i].target == expected[i].target);
        CHECK(merged[i].predicted == expected[i].predicted);
      }
    }
    // A row and its copy tie; the earlier row comes first.
    const auto all = gradsum::mpi::suspect_rows(comm, mine, p.n);
    for (std::size_t i = 1; i < all.size(); ++i)
      if (all[i].score == all[i - 1].score) CHECK(all[i - 1].row < all[i].row);
    CHECK_THROWS_WITH_AS(gradsum::mpi::suspect_rows(comm, mine, 0),
                         "gradsum::mpi::suspect_rows: k (suspects wanted) must be >= 1, got 0",
                         gradsum::Error);
    CHECK_THROWS_WITH_AS(gradsum::mpi::suspect_rows(comm, mine, p.n + 1),
                         gradsum::concat("gradsum::mpi::suspect_rows: k (suspects wanted) is ",
                                         p.n + 1, " but the ranks together hold ", p.n,
                                         " rows; ask for at most ", p.n)
                             .c_str(),
                         gradsum::Error);
  }
  // Only rank 0 recorded: every rank refuses, none waits.
  const auto p = random_problem(8, 3, Kind::multiclass, 4, 29);
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  auto mine = gradsum::margin_history(
      Space(), model, loss, theta, data, gradsum::partition(p.n, mpi_size(), mpi_rank()));
  if (mpi_rank() == 0) mine.record();
  if (mpi_size() > 1)
    CHECK_THROWS_WITH_AS(gradsum::mpi::suspect_rows(comm, mine, 2),
                         gradsum::concat("gradsum::mpi::suspect_rows: ", mpi_size() - 1, " of ",
                                         mpi_size(),
                                         " rank(s) have no margins recorded: pass each rank's "
                                         "MarginHistory to fit() as a callback or call record() "
                                         "on every rank")
                             .c_str(),
                         gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(mpi_suspects, Spaces);
