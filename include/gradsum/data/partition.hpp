// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/data/rows.hpp>

#include <cstdint>

namespace gradsum {

/// Part `part` of `rows` split into `parts` contiguous near-equal parts.
///
/// Sizes differ by at most one; the first (size mod parts) parts hold the
/// extra row; parts may be empty when there are more parts than rows
/// (2 rows over 4 parts: 1, 1, 0, 0). The parts cover the rows in order.
inline RowRange partition(const RowRange& rows, int parts, int part) {
  if (parts < 1)
    fail("gradsum::partition: parts must be at least 1, got ", parts);
  if (part < 0 || part >= parts)
    fail("gradsum::partition: part must be in [0, ", parts, "), got ",
                 part);
  const std::int64_t n = rows.size();
  const std::int64_t base = n / parts;
  const std::int64_t extra = n % parts;
  const std::int64_t begin =
      rows.begin + part * base + (part < extra ? part : extra);
  return RowRange{begin, begin + base + (part < extra ? 1 : 0)};
}

/// The same split of rows selected through an index (a shuffled
/// mini-batch): the part holds positions of the same index.
template <class Memory>
RowList<Memory> partition(const RowList<Memory>& rows, int parts, int part) {
  const RowRange range = partition(RowRange{rows.begin, rows.end}, parts, part);
  return RowList<Memory>{rows.index, range.begin, range.end};
}

/// Part `part` of the rows [0, n) split into `parts` near-equal parts.
inline RowRange partition(std::int64_t n, int parts, int part) {
  return partition(RowRange{0, n}, parts, part);
}

}  // namespace gradsum
