// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/aggregation/robust.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/mpi/allreduce.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradsum {

/// Robust aggregation across MPI processes: the workers are the ranks of
/// a communicator. Each step, one MPI_Allgather hands every rank every
/// rank's buffer; then every rank runs the same combination kernel over the
/// gathered buffers in rank order (detail::robust_combine, one thread per
/// coordinate, a fixed order), so every rank holds the same bits whatever
/// its thread count. The gradient coordinates are combined by the
/// RobustRule (CoordinateMedian, TrimmedMean, NormClip; see
/// aggregation/robust.hpp for their sum scale); the loss, count and flags
/// that follow them are summed. With the plain-sum rule, or a median or
/// trimmed mean on one rank, it is Allreduce.
///
/// Everything else (agreement before the first collective, errors of the
/// first failing rank, integer sums and maxima for the Reproducible
/// reduction's bins) is Allreduce's. The rule is checked for W = the
/// number of ranks in the constructor of the step (agree()), so a bad knob
/// raises the same gradsum::Error on every rank. Traffic: W times the
/// buffer per rank instead of one buffer, so meant for moderate W.
class RobustAllreduce {
 public:
  /// Aggregates over the processes of `comm` (duplicated; collective) with
  /// `rule`; the sum (rule_.changes() false) in `buckets` when they are
  /// enabled, as `layout` says (Allreduce; a robust rule gathers every
  /// rank's whole buffer in one message whatever the buckets).
  RobustAllreduce(MPI_Comm comm, RobustRule rule,
                  DeviceBuffers device_buffers = DeviceBuffers::automatic, Buckets buckets = {},
                  SumLayout layout = {})
      : sum_(comm, device_buffers, buckets, layout), rule_(rule) {}

  /// Short name used in messages and command lines.
  static const char* name() { return "robust-allreduce"; }
  /// This process's rank.
  int rank() const { return sum_.rank(); }
  /// Number of processes W.
  int size() const { return sum_.size(); }
  /// The combination rule.
  const RobustRule& rule() const { return rule_; }
  /// Whether the gradient is combined by something other than the sum.
  bool robust() const { return rule_.changes(size()); }
  /// The (duplicated) communicator.
  MPI_Comm communicator() const { return sum_.communicator(); }

  /// How the sum is cut (Allreduce::buckets).
  const Buckets& buckets() const { return sum_.buckets(); }
  /// How the sum crosses the ranks (Allreduce::sum_algorithm).
  SumAlgorithm sum_algorithm() const { return sum_.sum_algorithm(); }
  /// The nodes of a two-level sum (Allreduce::nodes).
  int nodes() const { return sum_.nodes(); }
  /// Buckets started during backward passes (Allreduce::early_buckets).
  std::int64_t early_buckets() const { return sum_.early_buckets(); }
  /// Whether a step's message is summed in buckets during the backward
  /// pass: the sum, in buckets (Allreduce::overlaps).
  template <class View>
  bool overlaps() const {
    return !robust() && sum_.template overlaps<View>();
  }
  /// The sum in buckets during the backward pass (Allreduce::overlap);
  /// needs overlaps<View>().
  template <class ExecutionSpace, class View>
  Allreduce::Overlap<ExecutionSpace, View> overlap(const ExecutionSpace& space, const View& buffer,
                                                   std::size_t gradient, bool listen) {
    return sum_.overlap(space, buffer, gradient, listen);
  }

  /// Shards the optimizer state over the ranks (Allreduce::shard_optimizer:
  /// every rank holds the same combined gradient, whatever the rule).
  /// Returns *this.
  RobustAllreduce& shard_optimizer(bool on = true) {
    sum_.shard_optimizer(on);
    return *this;
  }
  /// Whether the optimizer state is sharded.
  bool shards_optimizer() const { return sum_.shards_optimizer(); }
  /// This rank's block of the parameters (Allreduce::optimizer_shard).
  ParameterShard optimizer_shard(std::int64_t num_parameters) const {
    return sum_.optimizer_shard(num_parameters);
  }
  /// Whether a sharded step's gradient is reduce-scattered: the plain-sum
  /// rule and Allreduce::reduce_scatters (a robust rule combines whole
  /// buffers).
  bool reduce_scatters() const { return !robust() && sum_.reduce_scatters(); }
  /// The next sum reduce-scattered (Allreduce::reduce_scatter_next), under
  /// the plain-sum rule.
  void reduce_scatter_next(std::size_t gradient) { sum_.reduce_scatter_next(robust() ? 0 : gradient); }
  /// Every rank's block of a host array copied to every rank
  /// (Allreduce::gather_blocks).
  template <class Value>
  void gather_blocks(Value* values, const std::vector<std::int64_t>& bounds) {
    sum_.gather_blocks(values, bounds);
  }
  /// Every rank's block copied to every rank (Allreduce::gather_shards).
  template <class ExecutionSpace, class View>
  void gather_shards(const ExecutionSpace& space, const View& values) {
    sum_.gather_shards(space, values);
  }
  /// The blocks collected on rank 0 (Allreduce::collect_shards).
  template <class Value>
  void collect_shards(const Value* mine, Value* all, std::int64_t num_parameters) {
    sum_.collect_shards(mine, all, num_parameters);
  }

  /// Prepares for buffers of `length` Scalars in `MemorySpace`: Allreduce's
  /// staging, and room for every rank's buffer (W length + W Scalars) in
  /// `MemorySpace` plus, when MPI cannot read that space, a host copy.
  template <class Scalar, class MemorySpace>
  void allocate(std::size_t length) {
    sum_.template allocate<Scalar, MemorySpace>(length);
    if (!robust()) return;
    const std::size_t bytes = (std::size_t(size()) * length + std::size_t(size())) * sizeof(Scalar);
    if (bytes > gathered_bytes_) {
      gathered_ = std::shared_ptr<void>(
          Kokkos::kokkos_malloc<MemorySpace>("gradsum::aggregation::robust::gathered", bytes),
          [](void* p) { Kokkos::kokkos_free<MemorySpace>(p); });
      gathered_bytes_ = bytes;
    }
    if (!sum_.direct() && host_gathered_.size() < bytes) host_gathered_.resize(bytes);
  }

  /// Sums `buffer` over all processes, in place (Allreduce::aggregate).
  /// Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& space, const View& buffer) {
    sum_.aggregate(space, buffer);
  }

  /// Combines buffer(0 … robust) over all processes by the rule and sums
  /// the rest, in place; every rank ends with the same bits. buffer(count_at)
  /// is each rank's sample count, which a per-sample NormClip needs (the
  /// step passes it; without it, count_at < 0, that rule throws the same
  /// on every rank). Fences `space`. Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& space, const View& buffer, std::int64_t robust_count,
                 std::int64_t count_at = -1) {
    if (rule_.needs_counts() &&
        !(count_at >= robust_count && count_at < std::int64_t(buffer.extent(0))))
      fail("gradsum::RobustAllreduce: a per-sample NormClip needs the position of the "
                   "sample count in the buffer, got count_at = ", count_at, " for ",
                   buffer.extent(0), " values, ", robust_count, " of them combined");
    if (!robust()) {
      sum_.aggregate(space, buffer);
      return;
    }
    using Scalar = typename View::non_const_value_type;
    using Memory = typename View::memory_space;
    const std::size_t n = buffer.extent(0);
    const std::size_t W = std::size_t(size());
    const std::size_t bytes = (W * n + W) * sizeof(Scalar);
    if (bytes > gathered_bytes_)
      fail("gradsum::RobustAllreduce: a buffer of ", n,
                   " values exceeds the gathered buffer; call allocate() first");
    Kokkos::View<Scalar*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>> gathered(
        static_cast<Scalar*>(gathered_.get()), W * n + W);
    const auto values = Kokkos::subview(gathered, Kokkos::make_pair(std::size_t(0), W * n));
    const auto factors = Kokkos::subview(gathered, Kokkos::make_pair(W * n, W * n + W));
    space.fence();
    if (sum_.direct()) {
      mpi::allgather(buffer.data(), values.data(), n, mpi::datatype<Scalar>(), sizeof(Scalar),
                     sum_.communicator());
    } else {
      Kokkos::View<Scalar*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
          reinterpret_cast<Scalar*>(host_gathered_.data()), W * n);
      auto mine = Kokkos::subview(host, Kokkos::make_pair(std::size_t(rank()) * n,
                                                          std::size_t(rank() + 1) * n));
      Kokkos::deep_copy(space, mine, buffer);
      space.fence();
      mpi::allgather(MPI_IN_PLACE, host.data(), n, mpi::datatype<Scalar>(), sizeof(Scalar),
                     sum_.communicator());
      Kokkos::deep_copy(space, values, host);
    }
    if (rule_.needs_counts()) {
      // Each rank's bound is c times its own sample count.
      const std::int64_t length = std::int64_t(n);
      Kokkos::parallel_for(
          "gradsum::aggregation::robust::counts",
          Kokkos::RangePolicy<ExecutionSpace>(space, 0, int(W)),
          KOKKOS_LAMBDA(int w) { factors(w) = values(w * length + count_at); });
    }
    detail::robust_combine(space, rule_, int(W), robust_count, std::int64_t(n), values, factors,
                           buffer);
    space.fence();
  }

  /// Element-wise maximum over all processes (Allreduce::aggregate_max).
  template <class ExecutionSpace, class View>
  void aggregate_max(const ExecutionSpace& space, const View& values) {
    sum_.aggregate_max(space, values);
  }

  /// Allreduce::agree, with the rule's kind and knobs added to the fields
  /// every rank must share, and the rule checked for W = size() (its error,
  /// the same on every rank, raised on every rank). Collective.
  void agree(const Signature& signature, const std::string& local_error) {
    Signature sig = signature;
    sig.add("robust rule", std::int64_t(rule_.kind));
    sig.add("robust rule k", rule_.k);
    sig.add_bits("robust rule c", rule_.c);
    sig.add("robust rule per sample", rule_.per_sample ? 1 : 0);
    std::string error = local_error;
    if (error.empty()) error = rule_.check(size());
    sum_.agree(sig, error);
  }

  /// The error of the lowest failing process (Allreduce::first_error).
  /// Collective.
  std::string first_error(const std::string& local_error) {
    return sum_.first_error(local_error);
  }

 private:
  Allreduce sum_;
  RobustRule rule_;
  std::shared_ptr<void> gathered_;
  std::size_t gathered_bytes_ = 0;
  std::vector<unsigned char> host_gathered_;
};

}  // namespace gradsum
