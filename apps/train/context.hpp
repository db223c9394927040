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

/// A bucket cap (bytes) that holds any gradient: the whole sum in one
/// bucket of the rank-order sum, after the backward pass.
constexpr std::int64_t one_bucket = std::int64_t(1) << 40;

/// The aggregation of every rank's gradient: by --aggregate's rule when
/// there are several ranks, the sum in buckets of at most `bucket_cap`
/// bytes (0 or less: one message).
Aggregation make_aggregation(const Options& o, std::int64_t bucket_cap);
/// make_aggregation with --bucket-cap's buckets (auto: one message, until
/// a GPT chooses; see choose_bucket_cap).
inline Aggregation make_aggregation(const Options& o) { return make_aggregation(o, o.bucket_cap); }

/// --bucket-cap auto's choice for a step, and what it rests on.
struct ChosenBuckets {
  std::int64_t cap = 0;           // bytes per bucket; one_bucket: one message's worth
  double backward_seconds = 0;    // rank 0's backward pass alone
  gradsum::plan::Network network; // the link, measured
  double exposed_seconds = 0;     // predicted communication past the backward pass
  double one_message_seconds = 0; // the same with one message after the pass
};

/// The bucket cap the step model (plan::choose_buckets) picks for a step
/// whose backward pass rank 0 timed as `profile` (empty: one bucket), over
/// `parameters` values of `scalar_bytes` bytes, on the link measured now
/// (mpi::measure_network), summed as `a` sums; rank 0's choice on every
/// rank. Collective.
ChosenBuckets choose_bucket_cap(const Aggregation& a,
                                const std::vector<gradsum::plan::FinalPoint>& profile,
                                std::size_t parameters, std::size_t scalar_bytes);

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
