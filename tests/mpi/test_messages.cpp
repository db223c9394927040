// SPDX-License-Identifier: Apache-2.0
// gradsum's collectives in pieces (mpi/messages.hpp), under mpiexec with 1
// to 4 ranks: a few values per message stand in for 2^31 - 1 (a buffer of
// 2^31 values does not fit this machine). Every expected value is a closed
// form of the rank and the place.

#include "mpi_helpers.hpp"

#include <gradsum/mpi/messages.hpp>

#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using gradsum_test::mpi_rank;
using gradsum_test::mpi_size;

// Lowers gradsum's message limit for one test case.
class MessageLimit {
 public:
  explicit MessageLimit(std::size_t n) : previous_(gradsum::mpi::set_message_elements(n)) {}
  ~MessageLimit() { gradsum::mpi::set_message_elements(previous_); }
  MessageLimit(const MessageLimit&) = delete;
  MessageLimit& operator=(const MessageLimit&) = delete;

 private:
  std::size_t previous_;
};

const std::size_t message_sizes[] = {0, 1, 2, 7, 100};

}  // namespace

TEST_CASE("a message longer than the limit goes in pieces, each element summed whole") {
  // Rank r holds i (r + 1) at place i: the sum over p ranks is
  // i p (p + 1) / 2, exact in doubles and in 64-bit integers.
  const int p = mpi_size(), r = mpi_rank();
  MessageLimit limit(7);
  for (const std::size_t n : message_sizes) {
    std::vector<double> x(n);
    std::vector<std::int64_t> k(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = double(i) * (r + 1);
      k[i] = std::int64_t(i) * (r + 1);
    }
    gradsum::mpi::allreduce_in_place(x.data(), n, MPI_DOUBLE, sizeof(double), MPI_SUM,
                                     MPI_COMM_WORLD);
    gradsum::mpi::allreduce_in_place(k.data(), n, MPI_INT64_T, sizeof(std::int64_t), MPI_SUM,
                                     MPI_COMM_WORLD);
    for (std::size_t i = 0; i < n; ++i) {
      INFO("n " << n << " place " << i);
      CHECK(x[i] == double(i) * p * (p + 1) / 2);
      CHECK(k[i] == std::int64_t(i) * p * (p + 1) / 2);
    }
  }
}

TEST_CASE("allgather in pieces puts every rank's block in its place, in place or not") {
  const int p = mpi_size(), r = mpi_rank();
  MessageLimit limit(3);
  for (const std::size_t n : message_sizes) {
    std::vector<double> mine(n), all(n * std::size_t(p), -1.0), in_place(n * std::size_t(p), -1.0);
    for (std::size_t i = 0; i < n; ++i) mine[i] = in_place[std::size_t(r) * n + i] = 1000.0 * r + double(i);
    gradsum::mpi::allgather(mine.data(), all.data(), n, MPI_DOUBLE, sizeof(double),
                            MPI_COMM_WORLD);
    gradsum::mpi::allgather(MPI_IN_PLACE, in_place.data(), n, MPI_DOUBLE, sizeof(double),
                            MPI_COMM_WORLD);
    for (int k = 0; k < p; ++k)
      for (std::size_t i = 0; i < n; ++i) {
        INFO("n " << n << " rank " << k << " place " << i);
        CHECK(all[std::size_t(k) * n + i] == 1000.0 * k + double(i));
        CHECK(in_place[std::size_t(k) * n + i] == 1000.0 * k + double(i));
      }
  }
}

TEST_CASE("allgatherv in rounds concatenates uneven parts in rank order") {
  // Rank k holds (7 k) mod 11 values (rank 0 none), value 1000 k + i.
  const int p = mpi_size(), r = mpi_rank();
  auto count = [](int k) { return std::int64_t((7 * k) % 11); };
  for (const std::size_t most : {std::size_t(1), std::size_t(4), std::size_t(1000)}) {
    MessageLimit limit(most);
    std::vector<std::uint64_t> mine(std::size_t(count(r)));
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = std::uint64_t(1000 * r) + i;
    std::vector<std::int64_t> counts;
    const auto all = gradsum::mpi::allgatherv(mine, gradsum::mpi::Communicator(MPI_COMM_WORLD),
                                              counts);
    std::vector<std::uint64_t> expected;
    for (int k = 0; k < p; ++k) {
      CHECK(counts[std::size_t(k)] == count(k));
      for (std::int64_t i = 0; i < count(k); ++i) expected.push_back(std::uint64_t(1000 * k + i));
    }
    INFO("at most " << most << " values per message");
    CHECK(all == expected);
  }
}

TEST_CASE("alltoallv in rounds delivers every pair's values in order") {
  // Rank r sends (r + 2 k) mod 5 values to rank k: value 10000 r + 100 k + i.
  const int p = mpi_size(), r = mpi_rank();
  auto count = [](int from, int to) { return std::size_t((from + 2 * to) % 5); };
  for (const std::size_t most : {std::size_t(1), std::size_t(2), std::size_t(1000)}) {
    MessageLimit limit(most);
    std::vector<std::vector<double>> send(static_cast<std::size_t>(p));
    for (int k = 0; k < p; ++k)
      for (std::size_t i = 0; i < count(r, k); ++i)
        send[std::size_t(k)].push_back(10000.0 * r + 100.0 * k + double(i));
    std::vector<std::int64_t> from;
    const auto got = gradsum::mpi::alltoallv(send, gradsum::mpi::Communicator(MPI_COMM_WORLD), from);
    std::vector<double> expected;
    for (int k = 0; k < p; ++k) {
      CHECK(from[std::size_t(k)] == std::int64_t(count(k, r)));
      for (std::size_t i = 0; i < count(k, r); ++i)
        expected.push_back(10000.0 * k + 100.0 * r + double(i));
    }
    INFO("at most " << most << " values per message");
    CHECK(got == expected);
  }
}

TEST_CASE("broadcast in pieces copies the root's values everywhere") {
  const int p = mpi_size(), r = mpi_rank();
  MessageLimit limit(2);
  std::string text = r == p - 1 ? std::string("the last rank's message") : std::string(23, ' ');
  gradsum::mpi::broadcast(&text[0], text.size(), MPI_CHAR, 1, p - 1, MPI_COMM_WORLD);
  CHECK(text == "the last rank's message");
}

TEST_CASE("set_message_elements refuses 0 and more than an int count") {
  CHECK_THROWS_WITH_AS(gradsum::mpi::set_message_elements(0),
                       doctest::Contains("0 elements per message; expected 1 to 2147483647"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::mpi::set_message_elements(std::size_t(1) << 31),
                       doctest::Contains("2147483648 elements per message"), gradsum::Error);
  CHECK(gradsum::mpi::message_elements() >= 1);
}
