// SPDX-License-Identifier: Apache-2.0
// "A step allocates nothing after construction" (docs/design.md), checked
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
// Likewise the chunked reduction's process-wide workspace (label
// gradsum::chunked_reduction::workspace) may grow in the first steps that
// take that path; it is kept, so later steps must not allocate it again.

#include "test_helpers.hpp"

#include <atomic>
#include <cstdint>
#include <string>

using namespace gradsum_test;

namespace {

std::atomic<int> allocations{0};
std::atomic<int> gradsum_allocations{0};
std::atomic<int> workspace_allocations{0};
std::string first_label;

void count_allocation(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                      const std::uint64_t) {
  const std::string name(label);
  if (name == "gradsum::chunked_reduction::workspace") ++workspace_allocations;
  else if (name.rfind("gradsum", 0) == 0) ++gradsum_allocations;
  if (allocations.fetch_add(1) == 0) first_label = label;
}

// Counts the Kokkos allocations made while it lives.
class AllocationCounter {
 public:
  AllocationCounter() {
    allocations = 0;
    gradsum_allocations = 0;
    workspace_allocations = 0;
    first_label.clear();
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  }
  ~AllocationCounter() { Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr); }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  /// Every allocation since construction.
  int count() const { return allocations; }
  /// Those labelled gradsum::…, except the chunked reduction's workspace.
  int gradsum_count() const { return gradsum_allocations; }
  /// Those of the chunked reduction's workspace.
  int workspace_count() const { return workspace_allocations; }
  const std::string& first() const { return first_label; }
};

// Counts the allocations of a built step's first steps, then of `steps`
// more: mini-batches through a RowList and a full batch, as training does.
// The first steps may grow only the chunked reduction's workspace; the
// later ones may allocate nothing at all.
template <class Step, class Data, class Sampler>
void check_allocations(Step step, const Data& data, const Sampler& sampler, int steps = 4) {
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
}

// Builds a step of a small linear model (allocating everything it needs)
// and checks its allocations.
template <class Space, class Optimizer>
void check_steps_allocate_nothing(const Optimizer& optimizer, const char* what, bool binary = true) {
  INFO("optimizer: " << std::string(what));
  const int d = 5;
  const auto p = random_problem(64, d, binary ? Kind::binary : Kind::regression, 2, 5);
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  auto data = Data::from_host(p.n, p.d, p.x, p.y);
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(p.n, 16, 3);
  if (binary)
    check_allocations(gradsum::make_step<double>(Space(), gradsum::Linear(d),
                                                 gradsum::BinaryCrossEntropy{}, optimizer,
                                                 gradsum::Objective{0.01}),
                      data, sampler);
  else
    check_allocations(gradsum::make_step<double>(Space(), gradsum::Linear(d),
                                                 gradsum::SquaredError{}, optimizer,
                                                 gradsum::Objective{0.01}),
                      data, sampler);
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

namespace {
std::atomic<std::uint64_t> bin_bytes{0};
void count_bin_bytes(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                     const std::uint64_t size) {
  if (std::string(label).rfind("gradsum::reduction::reproducible::", 0) == 0) bin_bytes += size;
}
}  // namespace

TEST_CASE("a run-time reduction allocates the Reproducible bins only when it bins") {
  // About 9 int64 bins a coordinate: 72 MB a million parameters, for
  // nothing when the reduction sums plainly (only the norms' 2 coordinates
  // keep bins).
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int d = 999;  // P = 1000
  auto bytes = [&](const char* kind) {
    bin_bytes = 0;
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_bin_bytes);
    {
      auto step = gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                             gradsum::SGD{}, gradsum::Objective{},
                                             gradsum::Analytic{},
                                             gradsum::RuntimeReduction::parse(kind));
    }
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    return std::uint64_t(bin_bytes);
  };
  CHECK(bytes("reproducible") >= 9 * 1000 * sizeof(std::int64_t));
  // The norms' two coordinates of bins, in two buffers, with Kokkos'
  // bookkeeping: well under a kilobyte.
  CHECK(bytes("sum") < 1024);
  CHECK(bytes("compensated") < 1024);
}

TEST_CASE_TEMPLATE_DEFINE("a layer-wise step allocates nothing after construction", Space,
                          no_allocations_layerwise) {
  // Its panels live in the workspace the step allocated when it was built.
  using Memory = typename Space::memory_space;
  using Data = gradsum::Dataset<double, Memory>;
  gradsum::MiniBatchSampler<Memory> sampler(64, 16, 5);
  const auto classes = random_problem(64, 8, Kind::multiclass, 3, 13);
  const auto data = Data::from_host(classes.n, classes.d, classes.x, classes.y);
  const gradsum::MLP net(8, {24, 7}, 3, gradsum::Activation::tanh);
  check_allocations(gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                               gradsum::Adam{}, gradsum::Objective{0.01}),
                    data, sampler);
  check_allocations(gradsum::make_step<double>(Space(), gradsum::Softmax(8, 3),
                                               gradsum::SoftmaxCrossEntropy{}, gradsum::Adam{},
                                               gradsum::Objective{0.01}),
                    data, sampler);
}
TEST_CASE_TEMPLATE_APPLY(no_allocations_layerwise, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a GPT step allocates nothing after construction", Space,
                          no_allocations_network) {
  // The network path's panels, attention's buffers included, live in the
  // workspace the step allocated when it was built; the batches of the
  // sampler take several panels of two windows each.
  using Memory = typename Space::memory_space;
  const std::string text = "And God said, Let there be light: and there was light.";
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), 6, "text");
  const auto data = windows.template dataset<float>();
  gradsum::Gpt gpt({vocabulary.size(), 6, 2, 2, 8});
  gpt.panel_tokens = 12;
  gradsum::MiniBatchSampler<Memory> sampler(data.num_samples(), 5, 3);
  check_allocations(gradsum::make_step<float>(Space(), gpt, gradsum::SoftmaxCrossEntropy{},
                                              gradsum::AdamW{}, gradsum::Objective{0.01}),
                    data, sampler);
}
TEST_CASE_TEMPLATE_APPLY(no_allocations_network, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a wide step allocates nothing after its first on the chunked path", Space,
                          no_allocations_chunked) {
  // The path a GPU takes for accumulators wider than 1 KiB, forced here on
  // the host with the path's own chunk count. Its workspace starts empty,
  // so the first steps must grow it (which shows the path is taken) and
  // later steps must reuse it.
  using Memory = typename Space::memory_space;
  const ForceChunks force(0);
  using Data = gradsum::Dataset<double, Memory>;
  gradsum::MiniBatchSampler<Memory> sampler(64, 16, 3);
  auto check = [&](auto step, const Data& data, const char* what) {
    INFO("step: " << std::string(what));
    gradsum::detail::chunk_workspace_release<Memory>();
    auto theta = step.make_parameters();
    {
      AllocationCounter first;
      step(theta, data, sampler.batch(0));
      CHECK(first.workspace_count() >= 1);
    }
    check_allocations(std::move(step), data, sampler);
  };
  // 8-24(tanh)-3: 8*24+24 + 24*3+3 = 291 parameters, per sample (the
  // layer-wise path has no per-sample accumulators).
  gradsum::MLP net(8, {24}, 3, gradsum::Activation::tanh);
  net.layerwise = false;
  const auto classes = random_problem(64, 8, Kind::multiclass, 3, 11);
  const auto mlp_data = Data::from_host(classes.n, classes.d, classes.x, classes.y);
  auto mlp_step = [&](const auto& reduction) {
    return gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{}, gradsum::Adam{},
                                      gradsum::Objective{0.01}, gradsum::Analytic{}, reduction);
  };
  check(mlp_step(gradsum::Sum{}), mlp_data, "mlp, sum");
  check(mlp_step(gradsum::Compensated{}), mlp_data, "mlp, compensated");
  check(mlp_step(gradsum::Reproducible{}), mlp_data, "mlp, reproducible");
  // Newton sums the Hessian of 31 parameters: 961 accumulator values.
  const auto regression = random_problem(64, 30, Kind::regression, 1, 12);
  const auto linear_data = Data::from_host(regression.n, regression.d, regression.x, regression.y);
  auto newton_step = [&](const auto& reduction) {
    return gradsum::make_step<double>(Space(), gradsum::Linear(30), gradsum::SquaredError{},
                                      gradsum::Newton{}, gradsum::Objective{0.01},
                                      gradsum::Analytic{}, reduction);
  };
  check(newton_step(gradsum::Sum{}), linear_data, "newton, sum");
  check(newton_step(gradsum::Compensated{}), linear_data, "newton, compensated");
  check(newton_step(gradsum::Reproducible{}), linear_data, "newton, reproducible");
}
TEST_CASE_TEMPLATE_APPLY(no_allocations_chunked, Spaces);
