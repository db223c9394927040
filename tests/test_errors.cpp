// SPDX-License-Identifier: Apache-2.0
// The rule for a program's errors (Environment::run, through
// detail::run_program): an error every rank agreed on ends the program
// normally with status 1; any other ends the whole job when there are
// other ranks that may be waiting for this one. And on_every_rank turns
// any exception into the agreed error.

#include <doctest/doctest.h>

#include <gradsum/aggregation/local.hpp>
#include <gradsum/core/error.hpp>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

// run_program's status and whether it ended the job, for `body` on rank
// `rank` of `ranks`.
template <class Body>
std::pair<int, bool> run(int rank, int ranks, Body body) {
  bool aborted = false;
  const int status =
      gradsum::detail::run_program("test", rank, ranks, body, [&] { aborted = true; });
  return {status, aborted};
}

}  // namespace

TEST_CASE("run_program: agreed errors end every rank normally, others end the job") {
  const auto agreed = [] () -> int { throw gradsum::AgreedError("every rank has this"); };
  const auto alone = [] () -> int { throw gradsum::Error("this rank alone"); };
  const auto memory = [] () -> int { throw std::bad_alloc(); };
  const auto other = [] () -> int { throw 42; };
  CHECK(run(0, 1, [] { return 0; }) == std::make_pair(0, false));
  CHECK(run(1, 4, [] { return 3; }) == std::make_pair(3, false));
  for (int rank : {0, 1}) {
    CAPTURE(rank);
    CHECK(run(rank, 2, agreed) == std::make_pair(1, false));
    CHECK(run(rank, 2, alone) == std::make_pair(1, true));
    CHECK(run(rank, 2, memory) == std::make_pair(1, true));
    CHECK(run(rank, 2, other) == std::make_pair(1, true));
  }
  // One rank: nobody waits, so nothing is aborted.
  CHECK(run(0, 1, alone) == std::make_pair(1, false));
  CHECK(run(0, 1, memory) == std::make_pair(1, false));
}

TEST_CASE("on_every_rank: any exception becomes the agreed error, named") {
  gradsum::Local local;
  CHECK_THROWS_WITH_AS(gradsum::on_every_rank(local, [] { throw std::bad_alloc(); }),
                       doctest::Contains("out of memory (std::bad_alloc"), gradsum::AgreedError);
  CHECK_THROWS_WITH_AS(
      gradsum::on_every_rank(local, [] { throw std::runtime_error("disk on fire"); }),
      "disk on fire (a std::exception that is not a gradsum::Error)", gradsum::AgreedError);
  CHECK_THROWS_WITH_AS(gradsum::on_every_rank(local, [] { gradsum::fail("bad value ", 3); }),
                       "bad value 3", gradsum::AgreedError);
  CHECK_NOTHROW(gradsum::on_every_rank(local, [] {}));
}
