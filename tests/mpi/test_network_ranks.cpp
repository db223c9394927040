// SPDX-License-Identifier: Apache-2.0
// A GPT (a Network of layers over windows of text) across 1-4 ranks: each
// rank sums the loss and gradient of its own windows, one Allreduce per
// step sums them, and the step divides by the global count of positions;
// the gradient, loss and count are the single process's (to rounding),
// and training steps agree with it.

#include "../test_helpers.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace network_ranks_test {

const char* const text =
    "And God said, Let the waters under the heaven be gathered together unto one place, and "
    "let the dry land appear: and it was so. And God called the dry land Earth.";

TEST_CASE("mpi: a GPT's gradient over windows split among the ranks is the single process's, "
          "in one message per step") {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const int context = 6;
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), context, "text");
  const auto data = windows.dataset<double>();
  const gradsum::GptShape shape{vocabulary.size(), context, 2, 2, 8};
  const auto gpt = gradsum::make_gpt(shape);
  const int P = gpt.num_parameters();
  const gradsum::Objective objective{0.0, true};
  gradsum::AdamW adamw;
  adamw.lr = 0.01;
  auto local = gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{}, adamw,
                                          objective);
  auto distributed = gradsum::make_step<double>(
      Space(), gpt, gradsum::SoftmaxCrossEntropy{}, adamw, objective, gradsum::Analytic{},
      gradsum::Sum{}, gradsum::Allreduce(MPI_COMM_WORLD));
  const auto start = gradsum::gpt_initial_parameters(shape, 9);
  auto a = local.make_parameters();
  auto b = distributed.make_parameters();
  fill(a, start);
  fill(b, start);

  // Every window at stride context; rank r takes a contiguous share.
  const auto offsets = windows.full_batch_offsets(0, windows.num_windows());
  const std::int64_t n = std::int64_t(offsets.size());
  const std::int64_t first = n * rank / size, last = n * (rank + 1) / size;
  Kokkos::View<std::int64_t*, Memory> all_index("all", offsets.size());
  Kokkos::View<std::int64_t*, Memory> mine_index("mine", offsets.size());
  const auto all = windows.select(offsets, all_index);
  const auto mine = windows.select(
      std::vector<std::int64_t>(offsets.begin() + first, offsets.begin() + last), mine_index);

  const auto expected = local.evaluate(a, data, all);
  const auto got = distributed.evaluate(b, data, mine);
  CHECK(got.count == n * context);
  CHECK(got.count == expected.count);
  CHECK(got.loss == doctest::Approx(expected.loss).epsilon(1e-12));
  CHECK(relative_distance(to_host(distributed.gradient()), to_host(local.gradient()),
                          std::size_t(P)) < 1e-12);
  CHECK(distributed.aggregation().calls() == 1);  // one message per step

  // Five AdamW steps on both: the same parameters (to rounding).
  for (int s = 0; s < 5; ++s) {
    local(a, data, all);
    distributed(b, data, mine);
  }
  CHECK(distributed.aggregation().calls() == 6);
  CHECK(relative_distance(to_host(b), to_host(a), std::size_t(P)) < 1e-10);
}

}  // namespace network_ranks_test
