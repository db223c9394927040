// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The shape check of the embeddings' tables (rows x width parameters).

#include <gradsum/core/error.hpp>

#include <cstdint>
#include <limits>

namespace gradsum {
namespace detail {

/// Throws gradsum::Error, in `who`'s name, for a table of `rows` (called
/// `rows_name`) or `width` below 1, or too large to index with an int.
inline void validate_table(const char* who, const char* rows_name, int rows, int width) {
  if (rows < 1) fail(who, ": ", rows_name, " must be at least 1, got ", rows);
  if (width < 1) fail(who, ": width must be at least 1, got ", width);
  if (std::int64_t(rows) * width > std::numeric_limits<int>::max())
    fail(who, ": ", rows_name, " x width = ", rows, " x ", width, " exceeds the limit of ",
         std::numeric_limits<int>::max(), " parameters");
}

}  // namespace detail
}  // namespace gradsum
