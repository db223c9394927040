// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Seeded train/test split of a host Table.

#include <gradsum/core/error.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/sampler.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace gradsum {

/// Splits the rows of `table` into a training and a test table: a
/// Fisher–Yates shuffle of the row indices driven by SplitMix64(seed)
/// (the same on every compiler and rank) puts round(test_fraction * n)
/// rows into the test table; both keep the rows in their original order.
/// Throws gradsum::Error unless 0 <= test_fraction < 1 and both tables
/// would be non-empty when test_fraction > 0.
inline std::pair<Table, Table> train_test_split(const Table& table, double test_fraction,
                                                std::uint64_t seed) {
  const std::size_t n = table.num_rows, d = table.num_features;
  if (!(test_fraction >= 0 && test_fraction < 1))
    fail("gradsum::train_test_split: test_fraction must be in [0, 1), got ",
                 test_fraction);
  if (table.features.size() != n * d || table.targets.size() != n)
    fail("gradsum::train_test_split: table '", table.source, "' holds ",
                 table.features.size(), " features and ", table.targets.size(),
                 " targets for ", n, " rows of ", d, " features");
  const auto test_rows = std::size_t(std::llround(test_fraction * double(n)));
  if (test_fraction > 0 && (test_rows == 0 || test_rows == n))
    fail("gradsum::train_test_split: a test fraction of ", test_fraction, " of ", n,
                 " rows leaves ", test_rows, " test rows and ", n - test_rows,
                 " training rows; both must be non-empty");
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  detail::SplitMix64 rng(seed);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<char> in_test(n, 0);
  for (std::size_t k = 0; k < test_rows; ++k) in_test[order[k]] = 1;
  std::pair<Table, Table> out;
  for (Table* t : {&out.first, &out.second}) {
    t->num_features = d;
    t->header = table.header;
    t->source = table.source;
    t->class_names = table.class_names;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Table& t = in_test[i] ? out.second : out.first;
    t.features.insert(t.features.end(), table.features.begin() + std::ptrdiff_t(i * d),
                      table.features.begin() + std::ptrdiff_t((i + 1) * d));
    t.targets.push_back(table.targets[i]);
    ++t.num_rows;
  }
  return out;
}

}  // namespace gradsum
