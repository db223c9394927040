// SPDX-License-Identifier: Apache-2.0
// Partitioning and mini-batch sampling.

#include "test_helpers.hpp"

#include <algorithm>
#include <numeric>
#include <set>

using namespace gradsum_test;

TEST_CASE("partition: near-equal contiguous parts, empty parts allowed") {
  auto sizes = [](std::int64_t n, int parts) {
    std::vector<std::int64_t> out;
    std::int64_t next = 0;
    for (int p = 0; p < parts; ++p) {
      const auto r = gradsum::partition(n, parts, p);
      CHECK(r.begin == next);  // parts cover the rows in order
      next = r.end;
      out.push_back(r.size());
    }
    CHECK(next == n);
    return out;
  };
  CHECK(sizes(10, 3) == std::vector<std::int64_t>{4, 3, 3});
  CHECK(sizes(10, 4) == std::vector<std::int64_t>{3, 3, 2, 2});
  CHECK(sizes(2, 4) == std::vector<std::int64_t>{1, 1, 0, 0});
  CHECK(sizes(0, 3) == std::vector<std::int64_t>{0, 0, 0});
  for (std::int64_t n : {1, 7, 100, 1001})
    for (int parts = 1; parts <= 9; ++parts) {
      const auto s = sizes(n, parts);
      const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
      CHECK(*hi - *lo <= 1);
    }
  CHECK_THROWS_WITH_AS(gradsum::partition(10, 0, 0),
                       "gradsum::partition: parts must be at least 1, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::partition(10, 3, 3),
                       "gradsum::partition: part must be in [0, 3), got 3", gradsum::Error);
}

TEST_CASE_TEMPLATE_DEFINE("sampler: every epoch is a permutation, fixed by the seed", Space,
                          sampler) {
  using Memory = typename Space::memory_space;
  gradsum::MiniBatchSampler<Memory> a(23, 5, 42), b(23, 5, 42), c(23, 5, 43);
  CHECK(a.num_batches() == 5);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    a.shuffle(epoch);
    b.shuffle(epoch);
    c.shuffle(epoch);
    auto order = a.order();
    CHECK(order == b.order());
    CHECK(order != c.order());
    std::sort(order.begin(), order.end());
    std::vector<std::int64_t> iota(23);
    std::iota(iota.begin(), iota.end(), 0);
    CHECK(order == iota);
  }
  // The batches tile the epoch order, and worker parts tile each batch.
  std::vector<std::int64_t> seen;
  for (std::int64_t bt = 0; bt < a.num_batches(); ++bt) {
    const auto whole = a.batch(bt);
    CHECK(whole.size() == (bt < 4 ? 5 : 3));
    std::int64_t covered = 0;
    for (int part = 0; part < 3; ++part) {
      const auto mine = a.batch(bt, 3, part);
      CHECK(mine.begin == whole.begin + covered);
      covered += mine.size();
    }
    CHECK(covered == whole.size());
    auto index = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.index);
    for (std::int64_t i = whole.begin; i < whole.end; ++i) seen.push_back(index(i));
  }
  CHECK(seen == a.order());

  gradsum::MiniBatchSampler<Memory> full(7, 0, 1);
  CHECK(full.num_batches() == 1);
  CHECK(full.batch(0).size() == 7);
  CHECK(full.order() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(full.batch(1),
                       "gradsum::MiniBatchSampler::batch: batch index must be in [0, 1), got 1",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::MiniBatchSampler<Memory>(7, -1, 1),
                       doctest::Contains("batch_size must be >= 0"), gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(sampler, Spaces);

TEST_CASE_TEMPLATE_DEFINE("sampled mini-batch gradients split over workers sum to the batch's",
                          Space, sampled_parts) {
  using Memory = typename Space::memory_space;
  const auto problem = random_problem(50, 4, Kind::binary, 2, 77);
  const auto data = gradsum::Dataset<double, Memory>::from_host(problem.n, problem.d,
                                                                problem.x, problem.y);
  gradsum::MiniBatchSampler<Memory> sampler(problem.n, 16, 5);
  sampler.shuffle(2);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(4),
                                         gradsum::BinaryCrossEntropy{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  fill(theta, random_vector(5, 3));
  step.evaluate(theta, data, sampler.batch(1));
  const auto whole = to_host(step.sums());
  std::vector<double> total(5, 0.0);
  for (int part = 0; part < 4; ++part) {
    step.evaluate(theta, data, sampler.batch(1, 4, part));
    const auto s = to_host(step.sums());
    for (int j = 0; j < 5; ++j) total[j] += s[j];
  }
  CHECK(relative_distance(total, whole, 5) <= 1e-13);
  // And the batch gradient matches the host reference over the same rows.
  HostProblem batch{16, 4, {}, {}};
  const auto& order = sampler.order();
  for (std::int64_t i = 16; i < 32; ++i) {
    const auto r = std::size_t(order[std::size_t(i)]);
    batch.x.insert(batch.x.end(), problem.x.begin() + r * 4, problem.x.begin() + r * 4 + 4);
    batch.y.push_back(problem.y[r]);
  }
  const auto reference = reference_sums(batch, 1, Kind::binary, to_host(theta), 0, 16);
  CHECK(relative_distance(whole, reference, 5) <= 1e-13);
}
TEST_CASE_TEMPLATE_APPLY(sampled_parts, Spaces);

// Shuffled batches of several blocks of the batched path (three of 32 and
// a part block of 4), and a full batch in stored order (nine blocks and a
// part block of 12), on every path that prefetches the rows ahead from
// the batch's index: each gives the textbook gradient over the same rows.
template <class Space, class Model, class Loss>
void check_shuffled_batch(const Model& model, const Loss& loss, Kind kind, int outputs) {
  using Memory = typename Space::memory_space;
  // Rows of 160 bytes: over 128, where consecutive rows are left to the
  // hardware prefetchers and shuffled ones are not.
  const int d = 20;
  const auto problem = random_problem(300, d, kind, outputs, 91);
  const auto data =
      gradsum::Dataset<double, Memory>::from_host(problem.n, d, problem.x, problem.y);
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  const std::size_t P = std::size_t(model.num_parameters());
  const auto theta_host = random_vector(P, 4);
  fill(theta, theta_host);
  for (const std::int64_t batch_size : {100, 0}) {
    CAPTURE(batch_size);
    gradsum::MiniBatchSampler<Memory> sampler(problem.n, batch_size, 8);
    const std::int64_t size = sampler.batch_size();
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
      step.evaluate(theta, data, sampler.batch(b));
      HostProblem batch{size, d, {}, {}};
      for (std::int64_t i = size * b; i < size * (b + 1); ++i) {
        const auto r = std::size_t(sampler.order()[std::size_t(i)]);
        batch.x.insert(batch.x.end(), problem.x.begin() + r * d, problem.x.begin() + (r + 1) * d);
        batch.y.push_back(problem.y[r]);
      }
      const auto reference = reference_sums(batch, outputs, kind, theta_host, 0, size);
      CHECK(relative_distance(to_host(step.sums()), reference, P + 1) <= 1e-13);
    }
  }
}

TEST_CASE_TEMPLATE_DEFINE("sampled batches of several blocks give the textbook gradient on "
                          "every path",
                          Space, shuffled_blocks) {
  gradsum::Linear per_sample(20);
  per_sample.batched = false;
  SUBCASE("linear, batched") {
    check_shuffled_batch<Space>(gradsum::Linear(20), gradsum::BinaryCrossEntropy{}, Kind::binary,
                                1);
  }
  SUBCASE("linear, per sample") {
    check_shuffled_batch<Space>(per_sample, gradsum::BinaryCrossEntropy{}, Kind::binary, 1);
  }
  SUBCASE("softmax") {
    check_shuffled_batch<Space>(gradsum::Softmax(20, 3), gradsum::SoftmaxCrossEntropy{},
                                Kind::multiclass, 3);
  }
}
TEST_CASE_TEMPLATE_APPLY(shuffled_blocks, Spaces);
