// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>

#include <cmath>

namespace gradsum {
namespace detail {

/// Rejects a hyperparameter that is not positive and finite.
inline void require_positive(const char* policy, const char* name, double value) {
  if (!(value > 0) || !std::isfinite(value))
    fail("gradsum::", policy, ": ", name, " must be positive and finite, got ", value);
}

/// Rejects a hyperparameter that is negative or not finite.
inline void require_non_negative(const char* policy, const char* name, double value) {
  if (!(value >= 0) || !std::isfinite(value))
    fail("gradsum::", policy, ": ", name, " must be non-negative and finite, got ", value);
}

/// Rejects a decay rate outside [0, 1).
inline void require_unit_interval(const char* policy, const char* name, double value) {
  if (!(value >= 0 && value < 1))
    fail("gradsum::", policy, ": ", name, " must be in [0, 1), got ", value);
}

}  // namespace detail
}  // namespace gradsum
