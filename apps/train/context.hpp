// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every part of a gradsum-train run reads: the options, the inputs as
// read, the printer and the threads, handed down instead of kept in
// globals; and the aggregation every rank takes part in.

#include "options.hpp"

#include <gradsum/gradsum.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gradsum_train {

// With MPI every rank reads the whole file and takes its contiguous part
// of each mini-batch (global sampling), so the run follows the
// single-process run whatever the number of ranks.
//
// --aggregate and --reduce are run-time choices inside one policy each
// (RobustAllreduce / VirtualWorkers, RuntimeReduction), so they add no
// template instantiations: the workers of a robust rule are the ranks
// when there are several, else --workers parts of each batch.
#if GRADSUM_ENABLE_MPI
using Aggregation = gradsum::RobustAllreduce;
#else
using Aggregation = gradsum::Local;
#endif

/// The aggregation of every rank's gradient: by --aggregate's rule when
/// there are several ranks, the sum in --bucket-cap's buckets.
Aggregation make_aggregation(const Options& o);

/// The nodes of the aggregation's two-level sum (1: flat).
int sum_nodes(const Aggregation& a);

/// --aggregate's rule (an empty rule: the sum).
gradsum::RobustRule robust_rule(const Options& o);

/// The execution space --space names, else Kokkos' default.
inline std::string wanted_space(const Options& o) {
  return o.space.empty() ? gradsum::space_name<Kokkos::DefaultExecutionSpace>() : o.space;
}

/// printf on rank 0; the other ranks stay silent.
struct Printer {
  bool on = true;
  void operator()(const char* format, ...) const __attribute__((format(printf, 2, 3)));
  /// Sends what was printed on now (standard output redirected to a file
  /// or a pipe is otherwise written in blocks: a long run's progress would
  /// show only at its end).
  void flush() const {
    if (on) std::fflush(stdout);
  }
};

/// The rows to train on and, with --test-fraction and --validation, the
/// rows held out, all scaled by `scaler` (empty without --standardize),
/// which the checkpoints save.
struct Inputs {
  gradsum::Table train;
  gradsum::Table test;
  gradsum::Table validation;
  gradsum::StandardScaler scaler;
  std::vector<std::string> class_names;  // of a target column of names, else empty
  std::vector<std::int64_t> file_rows;   // --suspects: each training row's 1-based data row
};

/// What every stage of a run reads.
struct Context {
  Options options;
  Inputs inputs;
  Printer say;
  gradsum::ThreadChoice threads;  // how Environment picked the host threads
  gradsum::HostLoad load;         // the machine's load before Kokkos started
  int sum_nodes = 1;              // the nodes of a two-level sum (1: flat)
};

}  // namespace gradsum_train
