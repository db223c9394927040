// SPDX-License-Identifier: Apache-2.0
// train_test_split of a Dataset (data/split.hpp) on every space: the two
// sets are disjoint and together every row once, intact and in order; the
// test set has round(fraction * n) rows and is the set the documented rule
// picks (the smallest keys of SplitMix64, written out here from Steele, Lea
// & Flood's definition); the same seed gives the same split on every space,
// another seed another; over many seeds every row is held out about as
// often; strided and float data split alike; bad fractions are refused.

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

using namespace gradsum_test;

namespace {

// The (i + 1)-th draws of SplitMix64(seed), i < n: the published generator.
std::vector<std::uint64_t> splitmix64_draws(std::uint64_t seed, std::int64_t n) {
  std::vector<std::uint64_t> out;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    out.push_back(z ^ (z >> 31));
  }
  return out;
}

// The test rows the documented rule picks: those of the k smallest keys, in order.
std::vector<std::int64_t> expected_test_rows(std::uint64_t seed, std::int64_t n, std::int64_t k) {
  const auto keys = splitmix64_draws(seed, n);
  std::vector<std::int64_t> order(std::size_t(n), 0);
  for (std::int64_t i = 0; i < n; ++i) order[std::size_t(i)] = i;
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return keys[std::size_t(a)] < keys[std::size_t(b)]; });
  order.resize(std::size_t(k));
  std::sort(order.begin(), order.end());
  return order;
}

// Row i holds features (i, i + 0.5, -i) and target 10 i: its identity.
HostProblem numbered_rows(std::int64_t n) {
  HostProblem p;
  p.n = n;
  p.d = 3;
  for (std::int64_t i = 0; i < n; ++i) {
    p.x.insert(p.x.end(), {double(i), i + 0.5, -double(i)});
    p.y.push_back(10.0 * double(i));
  }
  return p;
}

// The row numbers a split set holds, after checking that each row is intact.
template <class Data>
std::vector<std::int64_t> rows_of(const Data& set) {
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), set.features());
  const auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), set.targets());
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < set.num_samples(); ++r) {
    const auto i = std::int64_t(x(r, 0));
    INFO("row " << r << " of the set claims to be data row " << i);
    CHECK(double(x(r, 1)) == i + 0.5);
    CHECK(double(x(r, 2)) == -double(i));
    CHECK(double(y(r)) == 10.0 * double(i));
    rows.push_back(i);
  }
  return rows;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("train_test_split of a Dataset: disjoint, complete, seeded, in order",
                          Space, dataset_split) {
  const Space space;
  for (const std::int64_t n : {1, 2, 7, 1000}) {
    const auto p = numbered_rows(n);
    const auto data = DataOn<Space>::from_host(n, p.d, p.x, p.y);
    for (const double fraction : {0.0, 0.2, 0.5}) {
      const auto k = std::int64_t(std::llround(fraction * double(n)));
      if (fraction > 0 && (k == 0 || k == n)) continue;  // refused, below
      for (const std::uint64_t seed : {0ULL, 42ULL, 0xffffffffffffffffULL}) {
        INFO("n = " << n << ", fraction = " << fraction << ", seed = " << seed);
        const auto [train, test] = gradsum::train_test_split(space, data, fraction, seed);
        CHECK(test.num_samples() == k);
        CHECK(train.num_samples() == n - k);
        CHECK(train.num_features() == p.d);
        const auto train_rows = rows_of(train), test_rows = rows_of(test);
        CHECK(std::is_sorted(train_rows.begin(), train_rows.end()));
        CHECK(test_rows == expected_test_rows(seed, n, k));
        std::vector<std::int64_t> all = train_rows;
        all.insert(all.end(), test_rows.begin(), test_rows.end());
        std::sort(all.begin(), all.end());
        std::vector<std::int64_t> every(std::size_t(n), 0);
        for (std::int64_t i = 0; i < n; ++i) every[std::size_t(i)] = i;
        CHECK(all == every);  // each row in exactly one of the two sets
      }
    }
  }
  const auto p = numbered_rows(200);
  const auto data = DataOn<Space>::from_host(200, p.d, p.x, p.y);
  CHECK(rows_of(gradsum::train_test_split(data, 0.2, 7).second) ==
        rows_of(gradsum::train_test_split(space, data, 0.2, 7).second));
  CHECK(rows_of(gradsum::train_test_split(data, 0.2, 8).second) !=
        rows_of(gradsum::train_test_split(data, 0.2, 7).second));
  CHECK_THROWS_WITH(gradsum::train_test_split(space, data, 1.0, 1),
                    "gradsum::train_test_split: test_fraction must be in [0, 1), got 1");
  CHECK_THROWS_WITH(gradsum::train_test_split(space, data, -0.1, 1),
                    "gradsum::train_test_split: test_fraction must be in [0, 1), got -0.1");
  CHECK_THROWS_WITH(gradsum::train_test_split(space, data, 0.001, 1),
                    "gradsum::train_test_split: a test fraction of 0.001 of 200 rows leaves 0 "
                    "test rows and 200 training rows; both must be non-empty");
}
TEST_CASE_TEMPLATE_APPLY(dataset_split, Spaces);

TEST_CASE_TEMPLATE_DEFINE("train_test_split of a strided or float Dataset splits as a copy does",
                          Space, dataset_split_kinds) {
  using Memory = typename Space::memory_space;
  const std::int64_t n = 97;
  const auto p = numbered_rows(n);
  const auto dense = DataOn<Space>::from_host(n, p.d, p.x, p.y);
  const auto reference = rows_of(gradsum::train_test_split(Space(), dense, 0.3, 5).second);
  // The target first, then the features: a LayoutStride Dataset of the columns.
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> table("table", n, p.d + 1);
  const auto host = Kokkos::create_mirror_view(table);
  for (std::int64_t i = 0; i < n; ++i) {
    host(i, 0) = p.y[std::size_t(i)];
    for (int j = 0; j < p.d; ++j) host(i, j + 1) = p.x[std::size_t(i) * p.d + j];
  }
  Kokkos::deep_copy(table, host);
  const auto strided = gradsum::Dataset<double, Memory>::from_table(table, 0);
  CHECK(rows_of(gradsum::train_test_split(Space(), strided, 0.3, 5).second) == reference);
  const auto single = DataOn<Space, float>::from_host(n, p.d, p.x, p.y);
  CHECK(rows_of(gradsum::train_test_split(Space(), single, 0.3, 5).second) == reference);
}
TEST_CASE_TEMPLATE_APPLY(dataset_split_kinds, Spaces);

TEST_CASE("train_test_split of a Dataset holds every row out about equally often") {
  // Over 400 seeds each of 50 rows is a test row with probability 0.2:
  // 80 times on average, standard deviation 8; 5 deviations either side.
  const std::int64_t n = 50;
  const auto p = numbered_rows(n);
  const auto data = DataOn<Kokkos::DefaultHostExecutionSpace>::from_host(n, p.d, p.x, p.y);
  std::vector<int> held_out(std::size_t(n), 0);
  for (std::uint64_t seed = 0; seed < 400; ++seed)
    for (const auto i : rows_of(gradsum::train_test_split(data, 0.2, seed).second))
      ++held_out[std::size_t(i)];
  for (std::int64_t i = 0; i < n; ++i) {
    INFO("row " << i << " held out " << held_out[std::size_t(i)] << " times in 400");
    CHECK(held_out[std::size_t(i)] >= 40);
    CHECK(held_out[std::size_t(i)] <= 120);
  }
}
