// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>

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

}  // namespace gradsum
