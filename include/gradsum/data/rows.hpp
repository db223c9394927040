// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace gradsum {

/// The contiguous rows [begin, end) of a data set.
struct RowRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;

  /// Number of rows selected.
  KOKKOS_FUNCTION std::int64_t size() const {
    return end > begin ? end - begin : 0;
  }
  /// The data-set row of the i-th selected row.
  KOKKOS_FUNCTION std::int64_t operator()(std::int64_t i) const {
    return begin + i;
  }
};

/// The rows index(begin) … index(end - 1) of a data set, for mini-batches
/// drawn from a shuffled order. `index` lives in `MemorySpace`.
template <class MemorySpace>
struct RowList {
  using memory_space = MemorySpace;
  Kokkos::View<const std::int64_t*, MemorySpace> index;
  std::int64_t begin = 0;
  std::int64_t end = 0;

  /// Number of rows selected.
  KOKKOS_FUNCTION std::int64_t size() const {
    return end > begin ? end - begin : 0;
  }
  /// The data-set row of the i-th selected row.
  KOKKOS_FUNCTION std::int64_t operator()(std::int64_t i) const {
    return index(begin + i);
  }
};

/// Gradient accumulation: several row selections (micro-batches) whose
/// gradients a Step sums locally, one after the other, before a single
/// aggregation. The result is that of one batch holding every part, for
/// one message instead of one per part. A host-side list; each part is a
/// RowRange or a RowList.
template <class Rows>
struct MicroBatches {
  std::vector<Rows> parts;

  /// Number of rows selected, over every part.
  std::int64_t size() const {
    std::int64_t n = 0;
    for (const auto& part : parts) n += part.size();
    return n;
  }
};

/// Whether a row selection is a MicroBatches list.
template <class T>
struct is_micro_batches : std::false_type {};
template <class Rows>
struct is_micro_batches<MicroBatches<Rows>> : std::true_type {};

}  // namespace gradsum
