// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// conflicting_duplicates(): the groups of rows whose features are identical
/// but whose targets differ. No model can fit both targets of such a group,
/// so they are either mislabelled rows or a sign that a feature is missing.
///
/// Equality is exact, on the values of the scalar type, with two rules a
/// user should know: -0 equals +0 (no model tells them apart), and every
/// NaN equals every NaN (whatever its sign or payload). Targets are
/// compared by the same rule. One kernel hashes every row; only rows whose
/// hashes collide are compared value by value, so a hash collision never
/// makes a false group.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

/// One group of rows with identical features and more than one target.
struct DuplicateGroup {
  /// The rows, 0-based and ascending (under MPI, global: see
  /// mpi::conflicting_duplicates).
  std::vector<std::int64_t> rows;
  /// targets[k] is the target of rows[k].
  std::vector<double> targets;
};

/// What conflicting_duplicates() found.
struct DuplicateReport {
  /// The groups whose targets differ, ordered by their first row.
  std::vector<DuplicateGroup> conflicting;
  /// Groups of two or more identical rows that share one target (harmless
  /// repetitions: counted, not listed), and the rows in them.
  std::int64_t consistent_groups = 0;
  std::int64_t consistent_rows = 0;
};

namespace detail {

/// Test hook: the hashes are and-ed with this mask before grouping, so a
/// test can force every row into one bucket (mask 0) and check that exact
/// comparison alone separates the rows.
inline std::uint64_t& duplicate_hash_mask() {
  static std::uint64_t mask = ~std::uint64_t(0);
  return mask;
}

/// The bits of `v` with -0 mapped to +0 and every NaN to one quiet NaN,
/// widened to 64 bits: equal words exactly when the values are equal
/// under the rules of conflicting_duplicates.
template <class Scalar>
KOKKOS_INLINE_FUNCTION std::uint64_t canonical_bits(Scalar v) {
  if (v != v) return sizeof(Scalar) == 4 ? 0x7fc00000ull : 0x7ff8000000000000ull;
  if (v == Scalar(0)) return 0;
  if constexpr (sizeof(Scalar) == 4) {
    std::uint32_t b = 0;
    __builtin_memcpy(&b, &v, sizeof b);
    return b;
  } else {
    std::uint64_t b = 0;
    __builtin_memcpy(&b, &v, sizeof b);
    return b;
  }
}

/// The value whose canonical_bits are `bits`, as a double.
template <class Scalar>
double from_canonical_bits(std::uint64_t bits) {
  if constexpr (sizeof(Scalar) == 4) {
    const std::uint32_t b = std::uint32_t(bits);
    float v = 0;
    std::memcpy(&v, &b, sizeof v);
    return double(v);
  } else {
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
}

// SplitMix64's finaliser: every input bit reaches every output bit.
KOKKOS_INLINE_FUNCTION std::uint64_t mix_duplicate_hash(std::uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

/// Each row's feature hash and canonical target, on the host.
struct DuplicateKeys {
  std::vector<std::uint64_t> hash;
  std::vector<std::uint64_t> target;
};

template <class Data>
void require_duplicates_data() {
  using Scalar = typename Data::scalar_type;
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "gradsum::conflicting_duplicates: the data's scalar_type must be "
                "float or double");
}

/// One pass over `data` on `space`: the hash of every row's canonical
/// feature bits and its canonical target. Blocking.
template <class ExecutionSpace, class Data>
DuplicateKeys duplicate_keys(const ExecutionSpace& space, const Data& data) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename Data::memory_space;
  const std::int64_t n = data.num_samples();
  const int d = data.num_features();
  const std::uint64_t mask = duplicate_hash_mask();
  Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, Memory> keys(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::diagnostics::duplicate_keys"),
      std::size_t(n), 2);
  const auto x = data.features();
  const auto y = data.targets();
  Kokkos::parallel_for(
      "gradsum::diagnostics::hash_rows",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) {
        std::uint64_t h = mix_duplicate_hash(0x9e3779b97f4a7c15ull ^ std::uint64_t(d));
        for (int j = 0; j < d; ++j) h = mix_duplicate_hash(h ^ canonical_bits<Scalar>(x(i, j)));
        keys(i, 0) = h & mask;
        keys(i, 1) = canonical_bits<Scalar>(y(i));
      });
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), keys);
  DuplicateKeys out;
  out.hash.resize(std::size_t(n));
  out.target.resize(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) {
    out.hash[std::size_t(i)] = host(i, 0);
    out.target[std::size_t(i)] = host(i, 1);
  }
  return out;
}

/// The canonical feature bits of the rows `rows` of `data` (local row
/// numbers), d words per row in that order, gathered on `space` and copied
/// to the host. Blocking.
template <class ExecutionSpace, class Data>
std::vector<std::uint64_t> duplicate_rows_bits(const ExecutionSpace& space, const Data& data,
                                               const std::vector<std::int64_t>& rows) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename Data::memory_space;
  const int d = data.num_features();
  const std::size_t m = rows.size();
  std::vector<std::uint64_t> out(m * std::size_t(d));
  if (m == 0 || d == 0) return out;
  Kokkos::View<std::int64_t*, Memory> index(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::diagnostics::duplicate_rows"), m);
  Kokkos::deep_copy(
      index,
      Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          rows.data(), m));
  Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, Memory> bits(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::diagnostics::duplicate_bits"), m,
      std::size_t(d));
  const auto x = data.features();
  Kokkos::parallel_for(
      "gradsum::diagnostics::gather_rows",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                           std::int64_t(m)),
      KOKKOS_LAMBDA(std::int64_t k) {
        for (int j = 0; j < d; ++j) bits(k, j) = canonical_bits<Scalar>(x(index(k), j));
      });
  Kokkos::deep_copy(
      Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(out.data(), m, std::size_t(d)),
      bits);
  return out;
}

/// A row as the grouping sees it: its hash, its (global) number and its
/// canonical target.
struct DuplicateRecord {
  std::uint64_t hash;
  std::int64_t row;
  std::uint64_t target;
};

/// Orders by hash, then row: equal hashes become runs, in row order.
inline void sort_duplicate_records(std::vector<DuplicateRecord>& records) {
  std::sort(records.begin(), records.end(), [](const DuplicateRecord& a, const DuplicateRecord& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.row < b.row;
  });
}

/// The records of sorted `records` that share their hash with another
/// (the only rows that can be duplicates), in order.
inline std::vector<DuplicateRecord> colliding_records(const std::vector<DuplicateRecord>& records) {
  std::vector<DuplicateRecord> out;
  for (std::size_t a = 0; a < records.size();) {
    std::size_t b = a + 1;
    while (b < records.size() && records[b].hash == records[a].hash) ++b;
    if (b - a > 1)
      out.insert(out.end(), records.begin() + std::ptrdiff_t(a),
                 records.begin() + std::ptrdiff_t(b));
    a = b;
  }
  return out;
}

/// A conflicting group before the targets are turned back into values.
struct RawDuplicateGroup {
  std::vector<std::int64_t> rows;
  std::vector<std::uint64_t> targets;
};

/// Splits `candidates` (the output of colliding_records()) into classes of
/// identical features (`bits`: d words per candidate, in the same order);
/// classes of two or more rows with more than one target go to
/// `conflicting` (rows ascending), the others are counted in `report`.
inline void group_duplicates_exactly(const std::vector<DuplicateRecord>& candidates,
                                     const std::vector<std::uint64_t>& bits, int d,
                                     std::vector<RawDuplicateGroup>& conflicting,
                                     DuplicateReport& report) {
  const std::size_t width = std::size_t(d);
  auto row_bits = [&](std::size_t k) { return bits.data() + k * width; };
  std::vector<std::size_t> order;
  for (std::size_t a = 0; a < candidates.size();) {
    std::size_t b = a + 1;
    while (b < candidates.size() && candidates[b].hash == candidates[a].hash) ++b;
    // Within one hash: sort by the features themselves, ties by row.
    order.clear();
    for (std::size_t k = a; k < b; ++k) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) {
      // memcmp orders bytes, not numbers: any strict order groups equal rows.
      const int c = width ? std::memcmp(row_bits(p), row_bits(q), width * 8) : 0;
      return c != 0 ? c < 0 : candidates[p].row < candidates[q].row;
    });
    for (std::size_t s = 0; s < order.size();) {
      std::size_t t = s + 1;
      while (t < order.size() &&
             (width == 0 || std::memcmp(row_bits(order[s]), row_bits(order[t]), width * 8) == 0))
        ++t;
      if (t - s > 1) {
        bool same = true;
        for (std::size_t k = s + 1; k < t; ++k)
          same = same && candidates[order[k]].target == candidates[order[s]].target;
        if (same) {
          ++report.consistent_groups;
          report.consistent_rows += std::int64_t(t - s);
        } else {
          RawDuplicateGroup g;
          for (std::size_t k = s; k < t; ++k) {
            g.rows.push_back(candidates[order[k]].row);
            g.targets.push_back(candidates[order[k]].target);
          }
          conflicting.push_back(std::move(g));
        }
      }
      s = t;
    }
    a = b;
  }
}

/// Orders the groups by first row and turns the targets into values.
template <class Scalar>
void finish_duplicate_report(std::vector<RawDuplicateGroup>& raw,
                             DuplicateReport& report) {
  std::sort(raw.begin(), raw.end(), [](const RawDuplicateGroup& a, const RawDuplicateGroup& b) {
    return a.rows[0] < b.rows[0];
  });
  for (auto& g : raw) {
    DuplicateGroup out;
    out.rows = std::move(g.rows);
    for (std::uint64_t t : g.targets) out.targets.push_back(from_canonical_bits<Scalar>(t));
    report.conflicting.push_back(std::move(out));
  }
}

}  // namespace detail

/// The groups of rows of `data` (a Dataset of float or double) whose
/// features are identical and whose targets are not all the same, ordered
/// by their first row, rows ascending within a group; identical rows that
/// share one target are only counted. Equality is exact, except that -0
/// equals +0 and every NaN equals every NaN (features and targets alike).
///
/// One kernel on `space` hashes every row; the rows whose hashes collide
/// are gathered and compared value by value on the host (so a collision
/// never makes a false group). Cost: one pass over the features, 16 bytes
/// per row copied to the host, plus the colliding rows' features.
/// Blocking; not collective (see mpi::conflicting_duplicates for data
/// sharded across ranks).
template <class ExecutionSpace, class Data>
DuplicateReport conflicting_duplicates(const ExecutionSpace& space, const Data& data) {
  detail::require_duplicates_data<Data>();
  const auto keys = detail::duplicate_keys(space, data);
  std::vector<detail::DuplicateRecord> records(keys.hash.size());
  for (std::size_t i = 0; i < records.size(); ++i)
    records[i] = {keys.hash[i], std::int64_t(i), keys.target[i]};
  detail::sort_duplicate_records(records);
  const auto candidates = detail::colliding_records(records);
  std::vector<std::int64_t> rows;
  for (const auto& r : candidates) rows.push_back(r.row);
  std::vector<detail::RawDuplicateGroup> raw;
  DuplicateReport report;
  detail::group_duplicates_exactly(candidates, detail::duplicate_rows_bits(space, data, rows),
                                   data.num_features(), raw, report);
  detail::finish_duplicate_report<typename Data::scalar_type>(raw, report);
  return report;
}

/// conflicting_duplicates on the default execution space of the data's
/// memory space.
template <class Data>
DuplicateReport conflicting_duplicates(const Data& data) {
  return conflicting_duplicates(typename Data::memory_space::execution_space(), data);
}

}  // namespace gradsum
