// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/signature.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <cstddef>
#include <string>

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

  /// Nothing to allocate.
  template <class Scalar, class MemorySpace>
  void allocate(std::size_t /*length*/) {}

  /// Combines `buffer` across processes, in place: nothing to do here.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& /*space*/, const View& /*buffer*/) {}

  /// Element-wise maximum of integer `values` over processes: nothing to
  /// do with one process.
  template <class ExecutionSpace, class View>
  void aggregate_max(const ExecutionSpace& /*space*/, const View& /*values*/) {}

  /// Checks that every process built the same step: with one process only
  /// the local error, if any, is thrown.
  static void agree(const Signature& /*signature*/, const std::string& local_error) {
    if (!local_error.empty()) throw AgreedError(local_error);
  }

  /// The error of the lowest failing process: here, the local one.
  static std::string first_error(const std::string& local_error) {
    return local_error;
  }
};

}  // namespace gradsum
