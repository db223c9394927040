// SPDX-License-Identifier: Apache-2.0
// mpi::conflicting_duplicates over shards (1-4 ranks under mpiexec): the
// planted groups, whose rows lie on different ranks, and the same report
// as the single-process function over the whole data, for even and uneven
// shards and when every hash collides; ranks that disagree on the columns
// or the scalar type fail alike.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/mpi/duplicates.hpp>

#include <mpi.h>

using namespace gradsum_test;

namespace {

// Rows [begin, end) of p as a Dataset of Scalar in Memory, `width` features.
template <class Scalar, class Memory>
gradsum::Dataset<Scalar, Memory> rows_of(const HostProblem& p, std::int64_t begin, std::int64_t end,
                                         int width) {
  std::vector<double> x, y;
  for (std::int64_t i = begin; i < end; ++i) {
    for (int j = 0; j < width; ++j) x.push_back(j < p.d ? p.x[std::size_t(i * p.d + j)] : 0.0);
    y.push_back(p.y[std::size_t(i)]);
  }
  return gradsum::Dataset<Scalar, Memory>::from_host(end - begin, width, x, y);
}

void same_report(const gradsum::DuplicateReport& a,
                 const gradsum::DuplicateReport& b) {
  REQUIRE(a.conflicting.size() == b.conflicting.size());
  for (std::size_t g = 0; g < a.conflicting.size(); ++g) {
    CAPTURE(g);
    CHECK(a.conflicting[g].rows == b.conflicting[g].rows);
    CHECK(a.conflicting[g].targets == b.conflicting[g].targets);
  }
  CHECK(a.consistent_groups == b.consistent_groups);
  CHECK(a.consistent_rows == b.consistent_rows);
}

void copy_row(HostProblem& p, std::int64_t from, std::int64_t to, double target) {
  for (int j = 0; j < p.d; ++j) p.x[std::size_t(to * p.d + j)] = p.x[std::size_t(from * p.d + j)];
  p.y[std::size_t(to)] = target;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("mpi::conflicting_duplicates finds groups across ranks", Space,
                          mpi_duplicates) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const int ranks = mpi_size(), rank = mpi_rank();
  auto p = random_problem(37, 4, Kind::multiclass, 3, 53);
  copy_row(p, 0, 36, 1);  // {0, 18, 36}: the first and last ranks' rows
  copy_row(p, 0, 18, 2);
  p.y[0] = 0;
  copy_row(p, 9, 27, p.y[9]);        // consistent: counted
  copy_row(p, 30, 31, p.y[30] + 1);  // {30, 31}: neighbours
  copy_row(p, 3, 4, 1);              // -0 and +0 in one group
  p.x[3 * 4 + 2] = 0.0;
  p.x[4 * 4 + 2] = -0.0;
  p.y[3] = 0;
  const std::vector<std::vector<std::int64_t>> planted{{0, 18, 36}, {3, 4}, {30, 31}};
  const auto whole = gradsum::conflicting_duplicates(
      Space(), rows_of<double, Memory>(p, 0, p.n, p.d));
  REQUIRE(whole.conflicting.size() == planted.size());
  for (std::size_t g = 0; g < planted.size(); ++g) CHECK(whole.conflicting[g].rows == planted[g]);
  CHECK(whole.conflicting[0].targets == std::vector<double>{0, 2, 1});
  CHECK(whole.consistent_groups == 1);
  // Even parts; then every row on the last rank; then all hashes equal.
  const auto even = gradsum::partition(p.n, ranks, rank);
  const std::int64_t last_begin = rank == ranks - 1 ? 0 : p.n;
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    gradsum::detail::duplicate_hash_mask() = variant == 2 ? 0 : ~0ull;
    const auto shard = variant == 1 ? rows_of<double, Memory>(p, last_begin, p.n, p.d)
                                    : rows_of<double, Memory>(p, even.begin, even.end, p.d);
    same_report(gradsum::mpi::conflicting_duplicates(Space(), comm, shard), whole);
    gradsum::detail::duplicate_hash_mask() = ~0ull;
  }
  // Float, and no rows anywhere.
  const auto whole_float =
      gradsum::conflicting_duplicates(Space(), rows_of<float, Memory>(p, 0, p.n, p.d));
  same_report(gradsum::mpi::conflicting_duplicates(
                  Space(), comm, rows_of<float, Memory>(p, even.begin, even.end, p.d)),
              whole_float);
  const auto none = gradsum::mpi::conflicting_duplicates(
      Space(), comm, gradsum::Dataset<double, Memory>::from_host(0, 4, {}, {}));
  CHECK(none.conflicting.empty());
  CHECK(none.consistent_groups == 0);
}
TEST_CASE_TEMPLATE_APPLY(mpi_duplicates, Spaces);

TEST_CASE_TEMPLATE_DEFINE("mpi::conflicting_duplicates: ranks that disagree fail alike", Space,
                          mpi_duplicates_refusals) {
  using Memory = typename Space::memory_space;
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const int ranks = mpi_size(), rank = mpi_rank(), last = ranks - 1;
  if (ranks < 2) return;  // one rank cannot disagree with itself
  const auto p = random_problem(12, 3, Kind::binary, 2, 7);
  const auto part = gradsum::partition(p.n, ranks, rank);
  const std::string who = "gradsum::mpi::conflicting_duplicates: rank " + std::to_string(last);
  CHECK_THROWS_WITH_AS(
      gradsum::mpi::conflicting_duplicates(
          Space(), comm, rows_of<double, Memory>(p, part.begin, part.end, rank == last ? 4 : 3)),
      (who + " holds rows of 4 features of 64-bit values, rank 0 rows of 3 features of 64-bit "
             "values; every rank's data must have the same columns and scalar type")
          .c_str(),
      gradsum::Error);
  auto disagree = [&] {
    if (rank == last)
      gradsum::mpi::conflicting_duplicates(Space(), comm,
                                           rows_of<float, Memory>(p, part.begin, part.end, 3));
    else
      gradsum::mpi::conflicting_duplicates(Space(), comm,
                                           rows_of<double, Memory>(p, part.begin, part.end, 3));
  };
  CHECK_THROWS_WITH_AS(disagree(),
                       (who + " holds rows of 3 features of 32-bit values, rank 0 rows of 3 "
                              "features of 64-bit values; every rank's data must have the same "
                              "columns and scalar type")
                           .c_str(),
                       gradsum::Error);
  // A rank without rows may have any width: nothing of it is compared.
  const auto fine = gradsum::mpi::conflicting_duplicates(
      Space(), comm,
      rank == last ? rows_of<double, Memory>(p, 0, 0, 9)
                   : rows_of<double, Memory>(p, part.begin, part.end, 3));
  CHECK(fine.conflicting.empty());
}
TEST_CASE_TEMPLATE_APPLY(mpi_duplicates_refusals, Spaces);
