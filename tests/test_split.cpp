// SPDX-License-Identifier: Apache-2.0
// The seeded train/test split.

#include "test_helpers.hpp"

#include <algorithm>
#include <set>

TEST_CASE("train_test_split: sizes, disjoint parts in order, seeded, clear errors") {
  gradsum::Table t;
  t.num_rows = 10;
  t.num_features = 2;
  t.source = "ten.csv";
  for (int i = 0; i < 10; ++i) {
    t.features.push_back(i);
    t.features.push_back(100 + i);
    t.targets.push_back(1000 + i);
  }
  const auto s = gradsum::train_test_split(t, 0.3, 5);
  REQUIRE(s.test.num_rows == 3);
  REQUIRE(s.train.num_rows == 7);
  std::set<double> seen;
  for (const auto* part : {&s.train, &s.test}) {
    for (std::size_t i = 0; i < part->num_rows; ++i) {
      const double row = part->features[2 * i];
      // Rows travel whole: features and target stay together.
      CHECK(part->features[2 * i + 1] == 100 + row);
      CHECK(part->targets[i] == 1000 + row);
      if (i > 0) CHECK(part->features[2 * (i - 1)] < row);  // original order kept
      seen.insert(row);
    }
  }
  CHECK(seen.size() == 10);  // every row exactly once
  CHECK(gradsum::train_test_split(t, 0.3, 5).test.features == s.test.features);
  bool differs = false;
  for (std::uint64_t seed = 6; seed < 16; ++seed)
    differs |= gradsum::train_test_split(t, 0.3, seed).test.features != s.test.features;
  CHECK(differs);
  CHECK(gradsum::train_test_split(t, 0.0, 5).train.num_rows == 10);
  CHECK_THROWS_WITH_AS(gradsum::train_test_split(t, 1.0, 5),
                       doctest::Contains("test fraction must be in [0, 1), got 1"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::train_test_split(t, 0.97, 5),
                       doctest::Contains("holding out 10 of 10 rows of ten.csv leaves none"),
                       gradsum::Error);
}
