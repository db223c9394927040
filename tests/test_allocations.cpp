// SPDX-License-Identifier: Apache-2.0
// "A step allocates nothing after construction" (DESIGN.md §6), checked
// with the Kokkos Tools allocation hook that Kokkos 3.4 and 4.x both offer
// (Kokkos::Tools::Experimental::set_allocate_data_callback): every View
// and every memory-space allocation reports to it.
//
// Two phases: the first step must allocate nothing of gradsum's (every
// gradsum View is labelled gradsum::…), which catches buffers created
// lazily on first use; later steps must allocate nothing at all. Kokkos
// itself may grow its per-thread reduction scratch once per process, the
// first time it sees a wider reduction (labels Kokkos::Serial::scratch_mem
// and an unlabelled OpenMP thread buffer); that is not the step's doing.

#include "test_helpers.hpp"

#include <atomic>
#include <cstdint>
#include <string>

using namespace gradsum_test;

namespace {

std::atomic<int> allocations{0};
std::atomic<int> gradsum_allocations{0};
std::string first_label;

void count_allocation(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                      const std::uint64_t) {
  if (std::string(label).rfind("gradsum", 0) == 0) ++gradsum_allocations;
  if (allocations.fetch_add(1) == 0) first_label = label;
}

// Counts the Kokkos allocations made while it lives.
class AllocationCounter {
 public:
  AllocationCounter() {
    allocations = 0;
    gradsum_allocations = 0;
    first_label.clear();
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  }
  ~AllocationCounter() { Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr); }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  /// Every allocation since construction.
  int count() const { return allocations; }
  /// Those labelled gradsum::….
  int gradsum_count() const { return gradsum_allocations; }
  const std::string& first() const { return first_label; }
};

// Builds the step (allocating everything it needs), then counts the
// allocations of `steps` more steps: mini-batches through a RowList and a
// full batch, as training does.
template <class Space, class Optimizer>
void check_steps_allocate_nothing(const Optimizer& optimizer, const char* what, bool binary = true,
                                  int steps = 4) {
  INFO("optimizer: " << std::string(what));
  const int d = 5;
  const auto p = random_problem(64, d, binary ? Kind::binary : Kind::regression, 2, 5);
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  auto data = Data::from_host(p.n, p.d, p.x, p.y);
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(p.n, 16, 3);
  auto run = [&](auto step) {
    auto theta = step.make_parameters();
    {
      AllocationCounter first;
      step(theta, data, sampler.batch(0));
      step(theta, data);
      CHECK_MESSAGE(first.gradsum_count() == 0, "the first steps allocated ",
                    first.gradsum_count(), " gradsum buffer(s), first: ", first.first());
    }
    AllocationCounter counter;
    for (int s = 1; s <= steps; ++s) {
      step(theta, data, sampler.batch(s % sampler.num_batches()));
      step(theta, data);
    }
    CHECK_MESSAGE(counter.count() == 0, "the steps allocated ", counter.count(),
                  " time(s), first: ", counter.first());
  };
  if (binary)
    run(gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                   optimizer, gradsum::Objective{0.01}));
  else
    run(gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                   optimizer, gradsum::Objective{0.01}));
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("the allocation counter sees a View allocated in its scope", Space,
                          counter_works) {
  AllocationCounter counter;
  CHECK(counter.count() == 0);
  Kokkos::View<double*, typename Space::memory_space> v("gradsum::test::allocated", 3);
  CHECK(counter.count() == 1);
  CHECK(counter.first() == "gradsum::test::allocated");
}
TEST_CASE_TEMPLATE_APPLY(counter_works, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a step allocates nothing after construction", Space, no_allocations) {
  check_steps_allocate_nothing<Space>(gradsum::SGD{0.1}, "sgd");
  check_steps_allocate_nothing<Space>(gradsum::Momentum{}, "momentum");
  check_steps_allocate_nothing<Space>(gradsum::Nesterov{}, "nesterov");
  check_steps_allocate_nothing<Space>(gradsum::AdaGrad{}, "adagrad");
  check_steps_allocate_nothing<Space>(gradsum::RMSProp{}, "rmsprop");
  check_steps_allocate_nothing<Space>(gradsum::Adam{}, "adam");
  check_steps_allocate_nothing<Space>(gradsum::AdamW{}, "adamw");
  check_steps_allocate_nothing<Space>(
      gradsum::Scheduled<gradsum::Adam>(gradsum::Adam{}, gradsum::Schedule::cosine(100)),
      "scheduled adam");
  check_steps_allocate_nothing<Space>(gradsum::LBFGS{}, "lbfgs");
  check_steps_allocate_nothing<Space>(gradsum::Newton{}, "newton");
  gradsum::SteepestDescent armijo;
  check_steps_allocate_nothing<Space>(armijo, "steepest descent, armijo");
  gradsum::SteepestDescent exact;
  exact.line_search = gradsum::SteepestDescent::LineSearch::exact;
  check_steps_allocate_nothing<Space>(exact, "steepest descent, exact", false);
}
TEST_CASE_TEMPLATE_APPLY(no_allocations, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a reproducible step allocates nothing after construction", Space,
                          no_allocations_reproducible) {
  const auto p = random_problem(50, 4, Kind::regression, 0, 9);
  auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(4), gradsum::SquaredError{},
                                         gradsum::Adam{}, gradsum::Objective{}, gradsum::Analytic{},
                                         gradsum::Reproducible{});
  auto theta = step.make_parameters();
  {
    AllocationCounter first;
    step(theta, data);
    CHECK_MESSAGE(first.gradsum_count() == 0, "the first step allocated ",
                  first.gradsum_count(), " gradsum buffer(s), first: ", first.first());
  }
  AllocationCounter counter;
  for (int s = 1; s <= 4; ++s) step(theta, data, gradsum::RowRange{s, 50 - s});
  CHECK_MESSAGE(counter.count() == 0, "the steps allocated ", counter.count(),
                " time(s), first: ", counter.first());
}
TEST_CASE_TEMPLATE_APPLY(no_allocations_reproducible, Spaces);
