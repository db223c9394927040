// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Seeded train/test splits: of a host Table, and of a Dataset on its own
/// memory space (the rows never leave it).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/dataset.hpp>
#include <gradsum/data/sampler.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gradsum {
namespace detail {

/// The test rows round(test_fraction * n) of a split of n rows, checked
/// as train_test_split documents; `who` names the caller in the messages.
inline std::int64_t split_test_rows(const char* who, std::int64_t n, double test_fraction) {
  if (!(test_fraction >= 0 && test_fraction < 1))
    fail(who, ": test_fraction must be in [0, 1), got ", test_fraction);
  const auto test_rows = std::int64_t(std::llround(test_fraction * double(n)));
  if (test_fraction > 0 && (test_rows == 0 || test_rows == n))
    fail(who, ": a test fraction of ", test_fraction, " of ", n, " rows leaves ", test_rows,
         " test rows and ", n - test_rows, " training rows; both must be non-empty");
  return test_rows;
}

/// Row i's key in a Dataset split: the (i + 1)-th number SplitMix64(seed)
/// draws. SplitMix64's output function is a bijection of 64-bit integers,
/// so distinct rows have distinct keys.
KOKKOS_INLINE_FUNCTION std::uint64_t split_key(std::uint64_t seed, std::int64_t i) {
  return splitmix64_output(seed + (std::uint64_t(i) + 1) * SplitMix64::increment);
}

/// A bound t with exactly `k` < n of the n keys below it, found bit by bit
/// from the top (a radix select: one counting pass per bit, until the count
/// is k). The keys are computed in the kernels, never stored. Blocking.
template <class Space>
std::uint64_t split_bound(const Space& space, std::uint64_t seed, std::int64_t n, std::int64_t k) {
  std::uint64_t bound = 0;
  for (int bit = 63; bit >= 0; --bit) {
    const std::uint64_t candidate = bound | (std::uint64_t(1) << bit);
    std::int64_t below = 0;
    Kokkos::parallel_reduce(
        "gradsum::data::split_count",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, n),
        KOKKOS_LAMBDA(std::int64_t i, std::int64_t& sum) {
          if (split_key(seed, i) < candidate) ++sum;
        },
        below);
    if (below <= k) bound = candidate;
    if (below == k) break;
  }
  return bound;
}

/// The scan that deals each row of `x`, `y` to the test set (key below
/// `bound`) or the training set, keeping their order: a row's place is the
/// count of test rows before it, or its index less that count.
template <class X, class Y, class OutX, class OutY>
struct DealRows {
  using value_type = std::int64_t;
  X x;
  Y y;
  OutX train_x, test_x;
  OutY train_y, test_y;
  std::uint64_t seed, bound;

  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& tests_before, bool final) const {
    const bool test = split_key(seed, i) < bound;
    if (final) {
      const std::int64_t r = test ? tests_before : i - tests_before;
      const OutX& to_x = test ? test_x : train_x;
      for (std::size_t j = 0; j < x.extent(1); ++j) to_x(r, j) = x(i, j);
      (test ? test_y : train_y)(r) = y(i);
    }
    if (test) ++tests_before;
  }
};

}  // namespace detail

/// Splits the rows of `table` into a training and a test table: a
/// Fisher–Yates shuffle of the row indices driven by SplitMix64(seed)
/// (the same on every compiler and rank) puts round(test_fraction * n)
/// rows into the test table; both keep the rows in their original order.
/// Throws gradsum::Error unless 0 <= test_fraction < 1 and both tables
/// would be non-empty when test_fraction > 0.
inline std::pair<Table, Table> train_test_split(const Table& table, double test_fraction,
                                                std::uint64_t seed) {
  const std::size_t n = table.num_rows, d = table.num_features;
  if (table.features.size() != n * d || table.targets.size() != n)
    fail("gradsum::train_test_split: table '", table.source, "' holds ",
                 table.features.size(), " features and ", table.targets.size(),
                 " targets for ", n, " rows of ", d, " features");
  const auto test_rows =
      std::size_t(detail::split_test_rows("gradsum::train_test_split", std::int64_t(n), test_fraction));
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

/// Splits the rows of `data` into a training and a test Dataset, in
/// `data`'s memory space, by kernels on `space`: the rows never leave the
/// device. Row i goes to the test set when its key, the (i + 1)-th number
/// SplitMix64(seed) draws, is among the round(test_fraction * n) smallest
/// keys: a uniformly random subset of that size, fixed by the seed, the
/// same on every space, thread count and rank. Both sets keep the rows in
/// their original order and are new row-major Views (Scalar and memory
/// space as `data`'s, any layout read). The subset differs from the one
/// the Table overload draws with the same seed. Throws gradsum::Error
/// unless 0 <= test_fraction < 1 and, for test_fraction > 0, both sets are
/// non-empty. Costs one pass over the rows per bit of the keys needed
/// (about log2(n), at most 64), then one copying pass. Blocking.
template <class ExecutionSpace, class Scalar, class MemorySpace, class Layout>
std::pair<Dataset<Scalar, MemorySpace>, Dataset<Scalar, MemorySpace>> train_test_split(
    const ExecutionSpace& space, const Dataset<Scalar, MemorySpace, Layout>& data,
    double test_fraction, std::uint64_t seed) {
  static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, MemorySpace>::accessible,
                "gradsum::train_test_split: the Dataset's memory space is not accessible from "
                "the execution space");
  const std::int64_t n = data.num_samples();
  const int d = data.num_features();
  const std::int64_t k = detail::split_test_rows("gradsum::train_test_split", n, test_fraction);
  using Out = Dataset<Scalar, MemorySpace>;
  using OutX = typename Out::features_view;
  using OutY = typename Out::targets_view;
  const auto alloc = [](const char* label) {
    return Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
  };
  const OutX train_x(alloc("gradsum::data::train_features"), n - k, d),
      test_x(alloc("gradsum::data::test_features"), k, d);
  const OutY train_y(alloc("gradsum::data::train_targets"), n - k),
      test_y(alloc("gradsum::data::test_targets"), k);
  const std::uint64_t bound = k > 0 ? detail::split_bound(space, seed, n, k) : 0;
  using Deal = detail::DealRows<typename Dataset<Scalar, MemorySpace, Layout>::features_view,
                                typename Dataset<Scalar, MemorySpace, Layout>::targets_view, OutX,
                                OutY>;
  Kokkos::parallel_scan(
      "gradsum::data::split_rows",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      Deal{data.features(), data.targets(), train_x, test_x, train_y, test_y, seed, bound});
  space.fence();
  return {Out(train_x, train_y), Out(test_x, test_y)};
}

/// train_test_split on the default execution space of `data`'s memory
/// space. Blocking.
template <class Scalar, class MemorySpace, class Layout>
std::pair<Dataset<Scalar, MemorySpace>, Dataset<Scalar, MemorySpace>> train_test_split(
    const Dataset<Scalar, MemorySpace, Layout>& data, double test_fraction, std::uint64_t seed) {
  return train_test_split(typename MemorySpace::execution_space(), data, test_fraction, seed);
}

}  // namespace gradsum
