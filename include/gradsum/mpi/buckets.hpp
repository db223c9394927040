// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Sums in buckets, each element added in rank order: the engine behind
/// Allreduce's buckets (mpi/allreduce.hpp).
///
/// A bucket [b, e) of a buffer is cut into one chunk per rank; an exchange
/// (MPI_Ialltoallv) hands chunk k of every rank to rank k, which adds the
/// p values of each of its elements in rank order, ((x_0 + x_1) + x_2) + …,
/// and a gather (MPI_Iallgatherv, in place) hands every rank every summed
/// chunk: each rank sends and receives 2 (p - 1) / p of the bucket, what a
/// ring allreduce moves. Since each element's additions have one order,
/// fixed by gradsum rather than by the algorithm MPI picks for a message's
/// size, the bits of a sum do not depend on how the buffer is cut into
/// buckets, nor on when each bucket starts. On 2 ranks they are those of
/// MPI_Allreduce (x_0 + x_1 either way).
///
/// The flat sum is one node of every rank; a two-level sum (mpi/nodes.hpp)
/// exchanges inside each node, adds node by node along a chain of the
/// nodes (each node's ranks in rank order onto the previous node's sums,
/// so the bits are the flat sum's), broadcasts from the last node and
/// gathers inside each node.
///
/// Buckets start in a fixed order on every rank. Exchanges and gathers go
/// on two communicators, each seeing its collectives in bucket order, as
/// MPI requires of non-blocking collectives; a bucket's gather starts only
/// after every earlier bucket's. MPI moves a non-blocking collective only
/// inside MPI calls: progress() tests them (the step calls it between
/// layers), finish() waits.

#include <gradsum/core/buckets.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>
#include <gradsum/mpi/nodes.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace gradsum {

namespace mpi {
namespace detail {

using gradsum::detail::BucketRange;

/// The buckets of values [0, n), from the end down (see Buckets), each at
/// most message_elements(); none when n is 0.
inline void cut_buckets(std::size_t n, const Buckets& b, std::vector<BucketRange>& out) {
  gradsum::detail::cut_buckets(n, b, message_elements(), out);
}

/// The engine: buckets of one buffer of host memory summed over the ranks,
/// each element in rank order (see the file's comment), on Lanes: one node
/// of every rank (flat) or nodes of consecutive ranks (two-level).
template <class Scalar>
class RankOrderSum {
 public:
  /// Sums over the ranks of `lanes` into `data`; `scratch` holds
  /// room_needed(n, buckets, lanes) values. `lanes` outlives the sum.
  void begin(Scalar* data, Scalar* scratch, const Lanes& lanes) {
    data_ = data;
    scratch_ = scratch;
    scratch_used_ = 0;
    lanes_ = &lanes;
    started_ = folded_ = gathered_ = done_ = 0;
  }

  /// Scratch values for `count` buckets over n values in all: each
  /// bucket's slice from every rank of the node, and its running sum.
  static std::size_t room_needed(std::size_t n, std::size_t count, const Lanes& lanes) {
    return std::size_t(lanes.local_size + 1) * (n / std::size_t(lanes.columns) + count);
  }

  /// Starts the exchange of the bucket [b, e) inside the node (and the
  /// receipt of the previous node's sums of this rank's slice). Buckets
  /// start in the same order on every rank.
  void start(BucketRange range) {
    Bucket& k = next_bucket(range);
    const std::size_t local = std::size_t(lanes_->local_size);
    const std::size_t columns = std::size_t(lanes_->columns), m = range.end - range.begin;
    std::size_t next = 0;
    for (std::size_t j = 0; j < local; ++j) {
      if (j < columns) k.count[j] = int(m / columns + (j < m % columns ? 1 : 0));
      k.displ[j] = int(next);
      next += std::size_t(k.count[j]);
    }
    exchange(k);
  }

  /// Starts the bucket [b, e) as a reduce-scatter: rank j receives the
  /// bucket's values that lie in its block [owners[j], owners[j + 1]) and
  /// adds them in rank order, and nothing is gathered: after finish() each
  /// rank holds the sums of its block's values alone (elsewhere its own
  /// values). Flat sums only (one node).
  void start_scattered(BucketRange range, const std::vector<std::int64_t>& owners) {
    if (lanes_->nodes != 1 || owners.size() != std::size_t(lanes_->local_size) + 1)
      fail("gradsum::mpi: a reduce-scatter needs a flat sum and one block per rank");
    Bucket& k = next_bucket(range);
    k.scattered = true;
    const auto b0 = std::int64_t(range.begin), e0 = std::int64_t(range.end);
    for (std::size_t j = 0; j + 1 < owners.size(); ++j) {
      const std::int64_t b = owners[j] > b0 ? owners[j] : b0;
      const std::int64_t e = owners[j + 1] < e0 ? owners[j + 1] : e0;
      k.count[j] = e > b ? int(e - b) : 0;
      k.displ[j] = e > b ? int(b - b0) : 0;
    }
    exchange(k);
  }

  /// Moves the started buckets on without waiting.
  void progress() {
    for (std::size_t i = done_; i < started_; ++i) {
      Bucket& k = buckets_[i];
      for (MPI_Request* r : {&k.exchange, &k.prefix, &k.send, &k.broadcast, &k.gather})
        if (*r != MPI_REQUEST_NULL) {
          int flag = 0;
          check(MPI_Test(r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        }
      if (k.phase == Phase::exchanging && k.exchange == MPI_REQUEST_NULL) k.phase = Phase::exchanged;
      if (k.phase == Phase::gathering && k.gather == MPI_REQUEST_NULL && k.send == MPI_REQUEST_NULL)
        k.phase = Phase::done;
    }
    advance();
  }

  /// Waits until every started bucket is summed on every rank.
  void finish() {
    for (std::size_t i = 0; i < started_; ++i) {
      Bucket& k = buckets_[i];
      while (k.phase != Phase::done) {
        for (MPI_Request* r : {&k.exchange, &k.prefix, &k.broadcast, &k.gather, &k.send})
          if (*r != MPI_REQUEST_NULL) {
            check(MPI_Wait(r, MPI_STATUS_IGNORE), "MPI_Wait");
            break;
          }
        progress();
      }
    }
    started_ = folded_ = gathered_ = done_ = 0;
  }

  /// Buckets started since begin().
  std::size_t started() const { return started_; }

 private:
  enum class Phase { exchanging, exchanged, broadcasting, gathering, done };
  struct Bucket {
    BucketRange range;
    Phase phase = Phase::done;
    MPI_Request exchange = MPI_REQUEST_NULL, prefix = MPI_REQUEST_NULL, send = MPI_REQUEST_NULL,
                broadcast = MPI_REQUEST_NULL, gather = MPI_REQUEST_NULL;
    std::vector<int> count, displ, from_count, from_displ;
    Scalar* scratch = nullptr;  // the slice from each rank of the node
    Scalar* sum = nullptr;      // the previous node's sums, then this node's
    bool scattered = false;     // start_scattered(): summed at its owners alone
  };

  // The next bucket's record, for [b, e): counts and displacements zero.
  Bucket& next_bucket(BucketRange range) {
    if (started_ == buckets_.size()) buckets_.emplace_back();
    Bucket& k = buckets_[started_++];
    k.range = range;
    k.scattered = false;
    const std::size_t local = std::size_t(lanes_->local_size), m = range.end - range.begin;
    if (m + local > max_message_elements)
      fail("gradsum::mpi: a bucket of ", m, " values on ", local, " ranks; expected fewer than ",
           max_message_elements - local);
    k.count.assign(local, 0);
    k.displ.assign(local, 0);
    return k;
  }

  // Starts the exchange of `k` as its counts and displacements say (and
  // the receipt of the previous node's sums of this rank's slice).
  void exchange(Bucket& k) {
    const Lanes& at = *lanes_;
    const std::size_t local = std::size_t(at.local_size);
    const int mine = k.count[std::size_t(at.local)];
    k.from_count.assign(local, mine);
    k.from_displ.resize(local);
    for (std::size_t r = 0; r < local; ++r) k.from_displ[r] = int(r) * mine;
    k.scratch = scratch_ + scratch_used_;
    k.sum = k.scratch + local * std::size_t(mine);
    scratch_used_ += (local + 1) * std::size_t(mine);
    k.phase = Phase::exchanging;
    check(MPI_Ialltoallv(data_ + k.range.begin, k.count.data(), k.displ.data(), datatype<Scalar>(),
                         k.scratch, k.from_count.data(), k.from_displ.data(), datatype<Scalar>(),
                         at.exchange, &k.exchange),
          "MPI_Ialltoallv");
    if (mine > 0 && at.node > 0)
      check(MPI_Irecv(k.sum, mine, datatype<Scalar>(), at.node - 1, 0, at.column, &k.prefix),
            "MPI_Irecv");
  }

  // In bucket order: folds the exchanged buckets whose previous sums have
  // come, passes them on and starts their broadcast; starts the gathers of
  // the broadcast ones.
  void advance() {
    while (done_ < started_ && buckets_[done_].phase == Phase::done) ++done_;
    while (folded_ < started_ && buckets_[folded_].phase == Phase::exchanged &&
           buckets_[folded_].prefix == MPI_REQUEST_NULL)
      fold(buckets_[folded_++]);
    while (gathered_ < folded_ && buckets_[gathered_].phase == Phase::broadcasting &&
           buckets_[gathered_].broadcast == MPI_REQUEST_NULL) {
      Bucket& k = buckets_[gathered_++];
      if (k.scattered) {
        k.phase = Phase::done;
        continue;
      }
      k.phase = Phase::gathering;
      check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data_ + k.range.begin,
                            k.count.data(), k.displ.data(), datatype<Scalar>(), lanes_->gather,
                            &k.gather),
            "MPI_Iallgatherv");
    }
  }

  // Adds this node's slices of `k` in rank order onto the previous node's
  // sums (the first node: onto its first rank's values); the last node
  // keeps them and broadcasts them to the other nodes, the others pass
  // them on.
  void fold(Bucket& k) {
    const Lanes& at = *lanes_;
    k.phase = Phase::broadcasting;
    const std::size_t mine = std::size_t(k.count[std::size_t(at.local)]);
    if (mine == 0) return;
    const bool last = at.node == at.nodes - 1;
    Scalar* mine_in_data = data_ + k.range.begin + std::size_t(k.displ[std::size_t(at.local)]);
    Scalar* out = last ? mine_in_data : k.sum;
    for (std::size_t i = 0; i < mine; ++i) {
      int r = at.node == 0 ? 1 : 0;
      Scalar s = at.node == 0 ? k.scratch[i] : k.sum[i];
      for (; r < at.local_size; ++r) s += k.scratch[std::size_t(r) * mine + i];
      out[i] = s;
    }
    if (!last)
      check(MPI_Isend(k.sum, int(mine), datatype<Scalar>(), at.node + 1, 0, at.column, &k.send),
            "MPI_Isend");
    if (at.nodes > 1)
      check(MPI_Ibcast(mine_in_data, int(mine), datatype<Scalar>(), at.nodes - 1, at.column,
                       &k.broadcast),
            "MPI_Ibcast");
  }

  Scalar* data_ = nullptr;
  Scalar* scratch_ = nullptr;
  std::size_t scratch_used_ = 0;
  const Lanes* lanes_ = nullptr;
  std::vector<Bucket> buckets_;  // kept from step to step: no allocation once grown
  std::size_t started_ = 0, folded_ = 0, gathered_ = 0, done_ = 0;
};

/// What Allreduce's rank-order sums keep from step to step: the nodes and
/// their communicators, the engines (one per scalar type), the plan of the
/// buckets and the room the exchanges receive in.
struct BucketedSums {
  BucketedSums(const Communicator& comm, const SumLayout& layout)
      : nodes(on_nodes(comm, layout)) {}
  NodeCommunicators nodes;
  RankOrderSum<double> doubles;
  RankOrderSum<float> floats;
  RankOrderSum<std::int64_t> integers;
  std::vector<BucketRange> plan;
  std::vector<unsigned char> room;
  std::int64_t early = 0;

  // Two-level on the nodes of `layout` where it asks for them or
  // (automatic) where there are several nodes of consecutive ranks and
  // more ranks than nodes; flat otherwise. Collective.
  static NodeCommunicators on_nodes(const Communicator& comm, const SumLayout& layout) {
    const auto map = find_nodes(comm, layout.ranks_per_node);
    if (layout.algorithm == SumAlgorithm::two_level && !map.consecutive)
      fail("gradsum::Allreduce: two-level sums need each node's ranks to be consecutive "
           "(each element is added in rank order); ", map.why,
           ". Place ranks node by node, or sum with SumAlgorithm::flat");
    const bool two_level =
        layout.algorithm == SumAlgorithm::two_level ||
        (layout.algorithm == SumAlgorithm::automatic && map.consecutive && map.nodes() > 1 &&
         map.nodes() < comm.size());
    return two_level ? NodeCommunicators(comm, map) : NodeCommunicators(comm);
  }

  template <class Scalar>
  RankOrderSum<Scalar>& engine() {
    if constexpr (std::is_same<Scalar, double>::value) return doubles;
    else if constexpr (std::is_same<Scalar, float>::value) return floats;
    else {
      static_assert(std::is_same<Scalar, std::int64_t>::value,
                    "gradsum::Allreduce: buckets sum double, float or std::int64_t values");
      return integers;
    }
  }
  // The plan of `length` values (`gradient` of them cut from the end
  // down, the rest one bucket), room for its exchanges.
  template <class Scalar>
  Scalar* prepare(std::size_t length, std::size_t gradient, const Buckets& b) {
    plan.clear();
    cut_buckets(gradient, cut(b), plan);
    if (length > gradient) plan.push_back({gradient, length});
    reserve<Scalar>(length, plan.size());
    return reinterpret_cast<Scalar*>(room.data());
  }
  // Room for the buckets of `length` values (allocate(): more than any
  // plan of them holds, the first bucket and the tail included).
  template <class Scalar>
  void reserve(std::size_t length, const Buckets& b) {
    const std::size_t limit = message_elements(), size = cut(b).size;
    reserve<Scalar>(length, length / (size < limit ? size : limit) + 3);
  }
  template <class Scalar>
  void reserve(std::size_t length, std::size_t count) {
    const std::size_t bytes =
        RankOrderSum<Scalar>::room_needed(length, count, nodes.lanes()) * sizeof(Scalar);
    if (room.size() < bytes) room.resize(bytes);
  }
  // The buckets as cut: the user's, or (two-level without buckets) one
  // bucket as large as a message allows.
  static Buckets cut(const Buckets& b) {
    return b.enabled() ? b : Buckets{0, max_message_elements};
  }
};

}  // namespace detail
}  // namespace mpi
}  // namespace gradsum
