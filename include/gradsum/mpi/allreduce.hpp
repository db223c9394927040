// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/signature.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/shards.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/mpi/buckets.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>
#include <gradsum/mpi/nodes.hpp>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum {

namespace detail {

/// Whether `message` starts with "rank N: " (N decimal digits), the prefix
/// Allreduce::first_error adds.
inline bool has_rank_prefix(const std::string& message) {
  if (message.rfind("rank ", 0) != 0) return false;
  std::size_t i = 5;
  while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
  return i > 5 && message.compare(i, 2, ": ") == 0;
}

}  // namespace detail

/// How Allreduce hands device memory to MPI.
enum class DeviceBuffers {
  automatic,  ///< directly when the host can access it or MPI reports GPU support, else staged
  direct,     ///< always pass the buffer itself (the MPI library must be GPU-aware)
  staged      ///< always copy through a host buffer allocated once
};

namespace mpi {

/// Whether the MPI library reports that it accepts CUDA device pointers
/// (Open MPI's MPIX_Query_cuda_support); false when it cannot tell.
inline bool reports_device_support() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace mpi

/// Aggregation across MPI processes by one in-place MPI_Allreduce (MPI_SUM)
/// per step over the step's single contiguous buffer: every parameter
/// block, the loss sum, the sample count and the failure count travel in
/// one message. The MPI datatype follows the scalar type.
///
/// With Buckets, the buffer goes in buckets instead, each element summed in
/// rank order by gradsum (mpi/buckets.hpp: the same bits whatever the
/// buckets), and a step on the network path sends each bucket of the
/// gradient as soon as the backward pass has finished it, while the earlier
/// layers compute (overlap()).
///
/// Takes any communicator and works on a duplicate of it. The step's
/// constructor, evaluate() and operator() become collective over it.
/// Memory the host cannot access is staged through a host buffer allocated
/// once by allocate(), unless MPI is GPU-aware (see DeviceBuffers; buckets
/// are summed on the host, so they always stage such memory).
class Allreduce {
 public:
  /// Aggregates over the processes of `comm` (duplicated; collective),
  /// in `buckets` when they are enabled, summed as `layout` says (see
  /// SumLayout; two-level sums without buckets go in one bucket). Every rank
  /// passes the same buckets and layout: ranks that differ in whether they
  /// cut the sum, its algorithm or its nodes all throw the same
  /// gradsum::AgreedError here, before any other collective.
  explicit Allreduce(MPI_Comm comm, DeviceBuffers device_buffers = DeviceBuffers::automatic,
                     Buckets buckets = {}, SumLayout layout = {})
      : comm_(comm), mode_(device_buffers), buckets_(buckets), layout_(layout) {
    agree_on_layout();
    if (buckets.enabled()) {
      if (buckets.size > mpi::max_message_elements || buckets.first > mpi::max_message_elements)
        fail("gradsum::Allreduce: buckets of ", buckets.first, " then ", buckets.size,
             " values; expected at most ", mpi::max_message_elements);
    } else if (buckets.first > 0) {
      fail("gradsum::Allreduce: a first bucket of ", buckets.first,
           " values but a bucket size of 0 (no buckets); give the size of the later buckets");
    }
    if (buckets.enabled() || layout.algorithm == SumAlgorithm::two_level)
      bucketed_ = std::make_shared<mpi::detail::BucketedSums>(comm_, layout);
  }

  /// Short name used in messages and command lines.
  static const char* name() { return "allreduce"; }
  /// This process's rank.
  int rank() const { return comm_.rank(); }
  /// Number of processes.
  int size() const { return comm_.size(); }
  /// The (duplicated) communicator gradsum uses.
  MPI_Comm communicator() const { return comm_.get(); }
  /// Number of aggregations (MPI_Allreduce calls of gradients) so far.
  std::int64_t calls() const { return *calls_; }
  /// Whether buffers go to MPI directly (after allocate()).
  bool direct() const { return direct_; }
  /// How the sums are cut (Buckets; not enabled: one MPI_Allreduce).
  const Buckets& buckets() const { return buckets_; }
  /// How the sums cross the ranks: flat, or two_level when the sums go
  /// through gradsum's rank-order engine on nodes (SumLayout::automatic
  /// resolved; one MPI_Allreduce counts as flat).
  SumAlgorithm sum_algorithm() const {
    return bucketed_ && bucketed_->nodes.lanes().nodes > 1 ? SumAlgorithm::two_level
                                                           : SumAlgorithm::flat;
  }
  /// The number of nodes of a two-level sum (1 when flat).
  int nodes() const { return bucketed_ ? bucketed_->nodes.lanes().nodes : 1; }
  /// Buckets started while layers of a backward pass were still to run
  /// (before the first layer's gradient was final), over all steps so far
  /// (overlap()).
  std::int64_t early_buckets() const { return bucketed_ ? bucketed_->early : 0; }

  /// Shards the optimizer state over the ranks (ZeRO stage 1): a step with
  /// an elementwise optimizer keeps the state of its block of the
  /// parameters alone (optimizer_shard()), updates that block and copies
  /// every rank's block to every rank (gather_shards()). Its training steps
  /// reduce-scatter the gradient where the sum is flat
  /// (reduce_scatter_next()): each rank receives the sums of its block
  /// alone. Sums then go through gradsum's rank-order engine even without
  /// buckets (mpi/buckets.hpp), so the parameters are the bits of a
  /// replicated run that sums in rank order. Every rank sets the same value
  /// before the step is built (its constructor compares them). Returns
  /// *this.
  Allreduce& shard_optimizer(bool on = true) {
    shard_optimizer_ = on;
    return *this;
  }
  /// Whether the optimizer state is sharded (shard_optimizer()).
  bool shards_optimizer() const { return shard_optimizer_; }
  /// Whether reduce_scatter_next() leaves each rank its block alone: the
  /// state is sharded over more than one rank and the sum is flat (a
  /// two-level sum sums the whole buffer on every rank instead).
  bool reduce_scatters() const {
    return shard_optimizer_ && size() > 1 && (!bucketed_ || bucketed_->nodes.lanes().nodes == 1);
  }
  /// The next aggregate() or overlap() sums the first `gradient` values of
  /// its buffer onto their owners alone, as a reduce-scatter: rank k holds
  /// the sums of its block optimizer_shard(gradient) afterwards, and its
  /// own values elsewhere; the values after them (a step's loss and
  /// counts) are summed on every rank. Each rank sends and receives
  /// (p - 1)/p of those values, half a rank-order allreduce. 0, or a sum
  /// that is not reduce_scatters(), sums everything. Call it on every rank
  /// alike; allocate() first.
  void reduce_scatter_next(std::size_t gradient) {
    scatter_ = reduce_scatters() && bucketed_ ? gradient : 0;
  }
  /// The block of `num_parameters` values this rank updates: part rank()
  /// of partition(num_parameters, size(), ·) when sharding, else all.
  ParameterShard optimizer_shard(std::int64_t num_parameters) const {
    if (!shard_optimizer_) return ParameterShard{0, num_parameters, false};
    const RowRange part = partition(num_parameters, size(), rank());
    return ParameterShard{part.begin, part.end, size() > 1};
  }
  /// Every rank's block (optimizer_shard()) of the vector `values` copied
  /// into every rank's `values`, in place; through the host staging buffer
  /// where MPI cannot take the memory directly. Fences `space`. Blocking;
  /// collective.
  template <class ExecutionSpace, class View>
  void gather_shards(const ExecutionSpace& space, const View& values) {
    using Value = typename View::non_const_value_type;
    space.fence();
    const auto& bounds = blocks(std::int64_t(values.extent(0)));
    if (direct_ && values.span_is_contiguous()) {
      mpi::allgather_blocks(values.data(), bounds, mpi::datatype<Value>(), comm_.get(),
                            blocks_->round);
      return;
    }
    auto host = staging_view<Value>(values.extent(0));
    Kokkos::deep_copy(space, host, values);
    space.fence();
    mpi::allgather_blocks(host.data(), bounds, mpi::datatype<Value>(), comm_.get(),
                          blocks_->round);
    Kokkos::deep_copy(space, values, host);
    space.fence();
  }
  /// Every rank's block [bounds[k], bounds[k + 1]) of the host array
  /// `values` copied into every rank's, in place (bounds: size() + 1
  /// offsets). Blocking; collective.
  template <class Value>
  void gather_blocks(Value* values, const std::vector<std::int64_t>& bounds) {
    mpi::allgather_blocks(values, bounds, mpi::datatype<Value>(), comm_.get(), blocks_->round);
  }
  /// This rank's block of a vector of `num_parameters` values (`mine`, on
  /// the host) collected into `all` on rank 0 (num_parameters values; not
  /// read elsewhere): a whole vector for a checkpoint. Blocking; collective.
  template <class Value>
  void collect_shards(const Value* mine, Value* all, std::int64_t num_parameters) {
    mpi::gather_blocks(mine, all, blocks(num_parameters), mpi::datatype<Value>(), sizeof(Value),
                       0, comm_.get(), blocks_->round);
  }

  /// Decides how buffers of `length` Scalars in `MemorySpace` reach MPI and
  /// allocates the host staging buffer (and the buckets' room) when they
  /// need one.
  template <class Scalar, class MemorySpace>
  void allocate(std::size_t length) {
    const bool host_accessible =
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;
    direct_ = mode_ == DeviceBuffers::direct ||
              (mode_ == DeviceBuffers::automatic &&
               (host_accessible || mpi::reports_device_support()));
    if (bucketed_ && !host_accessible) direct_ = false;
    if (!direct_ && staging_.size() < length * sizeof(Scalar))
      staging_.resize(length * sizeof(Scalar));
    // A sharded step's sums go in rank order (reduce_scatter_next()).
    if (shard_optimizer_ && !bucketed_)
      bucketed_ = std::make_shared<mpi::detail::BucketedSums>(comm_, layout_);
    if (bucketed_) bucketed_->reserve<Scalar>(length, buckets_);
  }

  /// Sums `buffer` over all processes, in place. Fences `space` first.
  /// Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& space, const View& buffer) {
    ++*calls_;
    if (bucketed_)
      sum_in_buckets(space, buffer);
    else
      allreduce(space, buffer, MPI_SUM);
    scatter_ = 0;
  }

  /// Whether overlap() can send a buffer like `View`'s while the backward
  /// pass runs: buckets enabled, more than one rank, memory the host can
  /// access. The same on every rank.
  template <class View>
  bool overlaps() const {
    return bucketed_ && size() > 1 &&
           Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
  }

  template <class ExecutionSpace, class View>
  class Overlap;

  /// The sum of a step's message (`buffer`: the gradient's first
  /// `gradient` values, then the loss and the step's slots) in buckets,
  /// started while the backward pass runs: while the returned object
  /// listens (`listen`), each bucket of the gradient starts as soon as the
  /// backward pass reports it final (model/detail/backward_progress.hpp);
  /// Overlap::finish() sends the rest and waits. The buckets, and the order
  /// in which they start, are the same on every rank whatever each one
  /// listens to. Needs overlaps<View>(). Collective (through finish()).
  template <class ExecutionSpace, class View>
  Overlap<ExecutionSpace, View> overlap(const ExecutionSpace& space, const View& buffer,
                                        std::size_t gradient, bool listen) {
    return Overlap<ExecutionSpace, View>(*this, space, buffer, gradient, listen);
  }

  /// Element-wise maximum of `values` over all processes, in place (the
  /// bin windows of the Reproducible reduction). Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate_max(const ExecutionSpace& space, const View& values) {
    allreduce(space, values, MPI_MAX);
  }

  /// Checks in two small collectives that every process built the same
  /// step (the same signature: its fields, then their values) and that none
  /// failed locally; otherwise every process throws the same
  /// gradsum::AgreedError. Collective.
  void agree(const Signature& step_signature, const std::string& local_error) {
    Signature signature = step_signature;
    signature.add("allreduce bucket size", std::int64_t(buckets_.size));
    signature.add("allreduce first bucket", std::int64_t(buckets_.first));
    signature.add("whether the optimizer state is sharded", shard_optimizer_ ? 1 : 0);
    std::string names;
    for (const auto& field : signature.fields) names += field.first + '\n';
    Signature shape = signature;
    shape.fields.clear();
    shape.add("local failure", local_error.empty() ? 0 : 1);
    shape.add("number of signature fields", std::int64_t(step_signature.fields.size()));
    shape.add_hash("names of the signature fields", names);
    std::vector<std::int64_t> lo, hi;
    min_max(shape, lo, hi);
    if (hi[0] > 0) throw AgreedError(first_error(local_error));
    std::string error = shape.disagreement("gradsum::Allreduce", size(), lo.data(), hi.data());
    if (error.empty()) {
      min_max(signature, lo, hi);
      error = signature.disagreement("gradsum::Allreduce", size(), lo.data(), hi.data());
    }
    if (!error.empty()) throw AgreedError(error);
  }

  /// The error message of the lowest-ranked process whose `local_error` is
  /// not empty, prefixed with its rank (unless it already starts with
  /// "rank N: ", an error agreed on before and reported again by an
  /// enclosing collective); empty when no process failed. Collective.
  std::string first_error(const std::string& local_error) {
    int failing = local_error.empty() ? size() : rank();
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, comm_.get()),
               "MPI_Allreduce");
    if (failing == size()) return {};
    std::int64_t length = rank() == failing ? std::int64_t(local_error.size()) : 0;
    mpi::check(MPI_Bcast(&length, 1, MPI_INT64_T, failing, comm_.get()), "MPI_Bcast");
    std::string message = rank() == failing ? local_error : std::string(std::size_t(length), ' ');
    if (length > 0)
      mpi::broadcast(&message[0], std::size_t(length), MPI_CHAR, 1, failing, comm_.get());
    if (detail::has_rank_prefix(message)) return message;
    return detail::concat("rank ", failing, ": ", message);
  }

 private:
  // The smallest and largest value of every field of `s` over the ranks,
  // in one MPI_MAX (minima through bitwise complement).
  void min_max(const Signature& s, std::vector<std::int64_t>& lo, std::vector<std::int64_t>& hi) {
    const std::size_t n = s.fields.size();
    std::vector<std::int64_t> values(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = s.fields[i].second;
      values[n + i] = ~s.fields[i].second;
    }
    mpi::allreduce_in_place(values.data(), values.size(), MPI_INT64_T, sizeof(std::int64_t),
                            MPI_MAX, comm_.get());
    lo.resize(n);
    hi.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      hi[i] = values[i];
      lo[i] = ~values[n + i];
    }
  }

  template <class ExecutionSpace, class View>
  void allreduce(const ExecutionSpace& space, const View& buffer, MPI_Op op) {
    using Value = typename View::non_const_value_type;
    space.fence();
    const auto n = buffer.extent(0);
    if (direct_) {
      mpi::allreduce_in_place(buffer.data(), n, mpi::datatype<Value>(), sizeof(Value), op,
                              comm_.get());
      return;
    }
    auto host = staging_view<Value>(n);
    Kokkos::deep_copy(space, host, buffer);
    space.fence();
    mpi::allreduce_in_place(host.data(), n, mpi::datatype<Value>(), sizeof(Value), op,
                            comm_.get());
    Kokkos::deep_copy(space, buffer, host);
    space.fence();
  }

  // Where every rank's block of a vector of n values begins (p + 1
  // offsets), computed once per length: the step gathers every step and
  // allocates nothing.
  const std::vector<std::int64_t>& blocks(std::int64_t n) {
    if (blocks_->length != n) {
      blocks_->bounds.resize(std::size_t(size()) + 1);
      for (int k = 0; k < size(); ++k) blocks_->bounds[std::size_t(k)] = partition(n, size(), k).begin;
      blocks_->bounds.back() = n;
      blocks_->length = n;
    }
    return blocks_->bounds;
  }

  // The first n values of the host staging buffer (allocate()d before).
  template <class Value>
  using HostValues = Kokkos::View<Value*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  template <class Value>
  HostValues<Value> staging_view(std::size_t n) {
    if (staging_.size() < n * sizeof(Value))
      fail("gradsum::Allreduce: buffer of ", n,
           " values exceeds the staging buffer; call allocate() first");
    return HostValues<Value>(reinterpret_cast<Value*>(staging_.data()), n);
  }

  // The buffer in buckets, each element in rank order; through the host
  // staging buffer where the host cannot read it.
  template <class ExecutionSpace, class View>
  void sum_in_buckets(const ExecutionSpace& space, const View& buffer) {
    using Value = typename View::non_const_value_type;
    space.fence();
    if (size() == 1) return;
    const std::size_t n = buffer.extent(0);
    constexpr bool host =
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
    Value* data = buffer.data();
    HostValues<Value> staged;
    if constexpr (!host) {
      staged = staging_view<Value>(n);
      Kokkos::deep_copy(space, staged, buffer);
      space.fence();
      data = staged.data();
    }
    auto& engine = bucketed_->template engine<Value>();
    const std::size_t gradient = scatter_ > 0 && scatter_ < n ? scatter_ : n;
    Value* room = bucketed_->template prepare<Value>(n, gradient, buckets_);
    engine.begin(data, room, bucketed_->nodes.lanes());
    for (const auto& range : bucketed_->plan) start_bucket(engine, range);
    engine.finish();
    if constexpr (!host) {
      Kokkos::deep_copy(space, buffer, staged);
      space.fence();
    }
  }

  // Starts `range`, scattered onto the blocks' owners when it lies in the
  // values reduce_scatter_next() named.
  template <class Value>
  void start_bucket(mpi::detail::RankOrderSum<Value>& engine, const mpi::detail::BucketRange& range) {
    if (scatter_ > 0 && range.end <= scatter_)
      engine.start_scattered(range, blocks(std::int64_t(scatter_)));
    else
      engine.start(range);
  }

  // Every rank's buckets (enabled or not), algorithm and ranks per node,
  // compared in one small collective (min_max); the same error on every
  // rank when they differ or are invalid.
  void agree_on_layout() {
    Signature layout;
    layout.subject = "disagree on how to sum";
    layout.advice = "every rank must pass the same Buckets and SumLayout";
    layout.add("whether the sum is cut into buckets (1) or sent in one message (0)",
               buckets_.enabled() ? 1 : 0);
    layout.add("the sum algorithm (0 automatic, 1 flat, 2 two-level)",
               std::int64_t(layout_.algorithm));
    layout.add("the ranks per node", layout_.ranks_per_node);
    std::vector<std::int64_t> lo, hi;
    min_max(layout, lo, hi);
    const std::string error = layout.disagreement("gradsum::Allreduce", size(), lo.data(), hi.data());
    if (!error.empty()) throw AgreedError(error);
    if (layout_.ranks_per_node < 0)
      throw AgreedError(detail::concat("gradsum::Allreduce: ", layout_.ranks_per_node,
                                       " ranks per node; expected 0 (the nodes MPI reports) or "
                                       "more"));
  }

  mpi::Communicator comm_;
  DeviceBuffers mode_;
  Buckets buckets_;
  SumLayout layout_;
  bool shard_optimizer_ = false;
  std::size_t scatter_ = 0;  // reduce_scatter_next(): the values summed at their owners
  struct Blocks {
    std::int64_t length = -1;
    std::vector<std::int64_t> bounds;
    mpi::detail::BlockRound round;
  };
  std::shared_ptr<Blocks> blocks_ = std::make_shared<Blocks>();
  bool direct_ = true;
  std::vector<unsigned char> staging_;
  std::shared_ptr<std::int64_t> calls_ = std::make_shared<std::int64_t>(0);
  std::shared_ptr<mpi::detail::BucketedSums> bucketed_;
};

}  // namespace gradsum

// Allreduce::Overlap, the listener behind overlap().
#include <gradsum/mpi/overlap.hpp>
