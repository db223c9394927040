// SPDX-License-Identifier: Apache-2.0
// Ranks that disagree are refused on every rank with the same message,
// never left waiting in collectives that no longer match: fit()'s options,
// data and callbacks; signatures of different lengths; an exception that is
// not a gradsum::Error on one rank. At 1 rank the same calls must run.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <gradsum/mpi/allreduce.hpp>
#include <gradsum/train/fit.hpp>

#include <mpi.h>

#include <functional>
#include <new>
#include <string>

using namespace gradsum_test;

namespace {

using RankSpace = Kokkos::DefaultHostExecutionSpace;
using RankData = gradsum::Dataset<double, RankSpace::memory_space>;

auto make_allreduce_step() {
  return gradsum::make_step<double>(RankSpace(), gradsum::Linear(3), gradsum::SquaredError{},
                                    gradsum::SGD{0.01}, gradsum::Objective{}, gradsum::Analytic{},
                                    gradsum::Sum{}, gradsum::Allreduce(MPI_COMM_WORLD));
}

// A callback that only counts its calls: fit() compares its kind.
struct StepCounter : gradsum::Callback {
  int steps = 0;
  void on_step(gradsum::FitState&) override { ++steps; }
};

}  // namespace

TEST_CASE("MPI: ranks that would run different training loops are refused on every rank") {
  const auto problem = random_problem(64, 3, Kind::regression, 1, 5);
  const auto data = RankData::from_host(problem.n, problem.d, problem.x, problem.y);
  const auto fewer = RankData::from_host(problem.n - 8, problem.d,
                                     std::vector<double>(problem.x.begin(), problem.x.end() - 24),
                                     std::vector<double>(problem.y.begin(), problem.y.end() - 8));
  const bool last = mpi_rank() == mpi_size() - 1 && mpi_size() > 1;
  struct Variant {
    const char* what;     // the field the message names
    std::function<void(gradsum::FitOptions&)> change;
    bool fewer_rows, validation, callback;
  };
  const Variant variants[] = {
      {"epochs ranges from 2 to 3", [](gradsum::FitOptions& o) { o.epochs = 3; }, false, false, false},
      {"batch size ranges from 16 to 32", [](gradsum::FitOptions& o) { o.batch = 32; }, false, false, false},
      {"accumulated batches ranges from 1 to 2", [](gradsum::FitOptions& o) { o.accumulate = 2; }, false, false, false},
      {"max steps ranges from 0 to 3", [](gradsum::FitOptions& o) { o.stopping.max_steps = 3; }, false, false, false},
      {"seed ranges from 7 to 8", [](gradsum::FitOptions& o) { o.seed = 8; }, false, false, false},
      {"training rows ranges from 56 to 64", [](gradsum::FitOptions&) {}, true, false, false},
      {"validation rows ranges from -1 to 64", [](gradsum::FitOptions&) {}, false, true, false},
      {"callback fields ranges from 0 to 1; callbacks and their settings differs",
       [](gradsum::FitOptions&) {}, false, false, true},
      {"scaling differs",
       [](gradsum::FitOptions& o) {
         o.agree_on = gradsum::Signature{};
         o.agree_on.add_hash("scaling", "z-score");
       },
       false, false, false},
  };
  for (const Variant& v : variants) {
    CAPTURE(std::string(v.what));
    auto step = make_allreduce_step();
    auto theta = step.make_parameters();
    gradsum::FitOptions options;
    options.epochs = 2;
    options.batch = 16;
    options.seed = 7;
    options.agree_on.add_hash("scaling", "none");
    // The last rank differs (at 1 rank every rank does, so all agree).
    if (last || mpi_size() == 1) v.change(options);
    const RankData& mine = v.fewer_rows && (last || mpi_size() == 1) ? fewer : data;
    const RankData* validation = v.validation && (last || mpi_size() == 1) ? &data : nullptr;
    StepCounter counter;
    auto run = [&] {
      if (v.callback && (last || mpi_size() == 1))
        return gradsum::fit(step, theta, mine, validation, options, counter);
      return gradsum::fit(step, theta, mine, validation, options);
    };
    if (mpi_size() == 1) {
      CHECK_NOTHROW(run());
      continue;
    }
    CHECK_THROWS_WITH_AS(run(),
                         doctest::Contains(gradsum::concat(
                             "gradsum::Allreduce: the ", mpi_size(),
                             " ranks run different training loops (", v.what, ")")
                                               .c_str()),
                         gradsum::AgreedError);
    CHECK(step.aggregation().calls() == 0);  // no step ran
    CHECK(counter.steps == 0);
  }
}

TEST_CASE("MPI: signatures of different lengths are refused, not mismatched") {
  gradsum::Allreduce all(MPI_COMM_WORLD);
  gradsum::Signature s;
  s.add("a", 1);
  s.add("b", 2);
  if (mpi_rank() == mpi_size() - 1) s.add("c", 3);
  if (mpi_size() == 1) {
    CHECK_NOTHROW(all.agree(s, ""));
    return;
  }
  CHECK_THROWS_WITH_AS(all.agree(s, ""),
                       doctest::Contains("number of signature fields ranges from 2 to 3"),
                       gradsum::AgreedError);
  // Still in step: the next agreement matches on every rank.
  gradsum::Signature same;
  same.add("a", 1);
  CHECK_NOTHROW(all.agree(same, ""));
}

TEST_CASE("MPI: std::bad_alloc on one rank inside on_every_rank reaches every rank") {
  gradsum::Allreduce all(MPI_COMM_WORLD);
  const int failing = mpi_size() - 1;
  CHECK_THROWS_WITH_AS(gradsum::on_every_rank(all,
                                              [&] {
                                                if (mpi_rank() == failing) throw std::bad_alloc();
                                              }),
                       doctest::Contains(gradsum::concat("rank ", failing,
                                                         ": out of memory (std::bad_alloc")
                                             .c_str()),
                       gradsum::AgreedError);
}
