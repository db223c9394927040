// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/sampler.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gradsum {

/// A table split into rows to train on and rows held out.
struct TrainTestSplit {
  Table train;
  Table test;
};

/// Holds out round(test_fraction * n) rows chosen by a Fisher–Yates shuffle
/// driven by SplitMix64(seed): the same rows on every rank, compiler and
/// standard library. Both parts keep the rows' original order. Throws
/// gradsum::Error unless 0 <= test_fraction < 1 and at least one row is
/// left to train on.
inline TrainTestSplit train_test_split(const Table& table, double test_fraction,
                                       std::uint64_t seed) {
  if (!(test_fraction >= 0 && test_fraction < 1))
    detail::fail("gradsum::train_test_split: the test fraction must be in [0, 1), got ",
                 test_fraction);
  const std::size_t n = table.num_rows, d = table.num_features;
  const auto held = std::size_t(std::llround(test_fraction * double(n)));
  if (held >= n)
    detail::fail("gradsum::train_test_split: holding out ", held, " of ", n, " rows of ",
                 table.source, " leaves none to train on");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  detail::SplitMix64 rng(seed ^ 0x13198a2e03707344ULL);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<bool> is_test(n, false);
  for (std::size_t i = 0; i < held; ++i) is_test[order[i]] = true;
  TrainTestSplit split;
  for (Table* t : {&split.train, &split.test}) {
    t->num_features = d;
    t->header = table.header;
    t->source = table.source;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Table& t = is_test[i] ? split.test : split.train;
    t.features.insert(t.features.end(), table.features.begin() + std::ptrdiff_t(i * d),
                      table.features.begin() + std::ptrdiff_t((i + 1) * d));
    t.targets.push_back(table.targets[i]);
    ++t.num_rows;
  }
  return split;
}

}  // namespace gradsum
