// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Values read back from saved state (a checkpoint's optimizer host values
/// and loop state). Checkpoints are files people exchange, and a checksum
/// stops damage, not forgery: every such value is checked before use.

#include <gradsum/core/error.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// The largest count saved state holds: counts are saved as doubles, exact
/// up to 2^53.
constexpr std::int64_t max_saved_count = std::int64_t(1) << 53;

/// The saved count `what` (a phrase naming its owner and field: "L-BFGS's
/// saved history head"; the caller that read the file names it), checked
/// to be an integer in [lo, hi] (hi <= max_saved_count) before it is
/// converted: converting a double out of range, or NaN, is undefined.
inline std::int64_t restored_count(double value, const std::string& what, std::int64_t lo = 0,
                                   std::int64_t hi = max_saved_count) {
  if (!(value >= double(lo) && value <= double(hi) && value == std::floor(value)))
    fail(what, " is ", value, ", expected an integer in [", lo, ", ", hi, "]");
  return std::int64_t(value);
}

/// The saved flag `what`: 0 or 1.
inline bool restored_flag(double value, const std::string& what) {
  if (value != 0 && value != 1) fail(what, " is ", value, ", expected 0 or 1");
  return value == 1;
}

/// The saved number `what`, checked to lie in [lo, hi] (infinite bounds
/// admit infinities; NaN is never admitted).
inline double restored_number(double value, const std::string& what, double lo, double hi) {
  if (!(value >= lo && value <= hi))
    fail(what, " is ", value, ", expected a number in [", lo, ", ", hi, "]");
  return value;
}

/// An optimizer's saved update count t (Adam, AdamW, a schedule's).
inline std::int64_t restored_update_count(double value, const std::string& optimizer) {
  return restored_count(value, concat("the ", optimizer, " optimizer's saved update count t"));
}

}  // namespace detail
}  // namespace gradsum
