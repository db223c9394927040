// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>

#include <cstdint>

namespace gradsum {

/// Aggregation within one process: the local sum is already the global one.
///
/// The library always ships this policy so that everything builds and runs
/// without MPI. Its collective operations are identities.
struct Local {
  /// Short name used in messages and command lines.
  static const char* name() { return "local"; }
  /// This process's index among the workers: 0.
  static int rank() { return 0; }
  /// Number of processes: 1.
  static int size() { return 1; }

  /// Combines `buffer` (gradient sums, loss sum, count) across processes,
  /// in place: nothing to do with one process.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& /*space*/, const View& /*buffer*/) {}

  /// The smallest of `value` over all processes: `value` itself.
  static std::int64_t min_over_workers(std::int64_t value) { return value; }
};

}  // namespace gradsum
