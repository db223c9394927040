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

#include <mpi.h>

#include <cstddef>
#include <cstdint>
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
/// each element in rank order (see the file's comment).
template <class Scalar>
class RankOrderSum {
 public:
  /// Sums over the ranks of `exchange` (`gather` a duplicate of it) into
  /// `data`; `scratch` holds room_needed(n, buckets) values.
  void begin(Scalar* data, Scalar* scratch, MPI_Comm exchange, MPI_Comm gather) {
    data_ = data;
    scratch_ = scratch;
    scratch_used_ = 0;
    exchange_ = exchange;
    gather_ = gather;
    check(MPI_Comm_size(exchange, &p_), "MPI_Comm_size");
    check(MPI_Comm_rank(exchange, &rank_), "MPI_Comm_rank");
    started_ = gathered_ = 0;
  }

  /// Scratch values for `count` buckets over n values in all.
  static std::size_t room_needed(std::size_t n, std::size_t count, int p) {
    return n + count * std::size_t(p);
  }

  /// Starts the exchange of the bucket [b, e). Buckets start in the same
  /// order on every rank.
  void start(BucketRange range) {
    if (started_ == buckets_.size()) buckets_.emplace_back();
    Bucket& k = buckets_[started_++];
    k.range = range;
    const std::size_t p = std::size_t(p_), m = range.end - range.begin;
    if (m + p > max_message_elements)
      fail("gradsum::mpi: a bucket of ", m, " values on ", p, " ranks; expected fewer than ",
           max_message_elements - p);
    k.count.resize(p);
    k.displ.resize(p);
    k.from_count.resize(p);
    k.from_displ.resize(p);
    std::size_t at = 0;
    for (std::size_t r = 0; r < p; ++r) {
      k.count[r] = int(m / p + (r < m % p ? 1 : 0));
      k.displ[r] = int(at);
      at += std::size_t(k.count[r]);
    }
    const int mine = k.count[std::size_t(rank_)];
    for (std::size_t r = 0; r < p; ++r) {
      k.from_count[r] = mine;
      k.from_displ[r] = int(r) * mine;
    }
    k.scratch = scratch_ + scratch_used_;
    scratch_used_ += p * std::size_t(mine);
    k.state = State::exchanging;
    check(MPI_Ialltoallv(data_ + range.begin, k.count.data(), k.displ.data(), datatype<Scalar>(),
                         k.scratch, k.from_count.data(), k.from_displ.data(), datatype<Scalar>(),
                         exchange_, &k.request),
          "MPI_Ialltoallv");
  }

  /// Moves the started buckets on without waiting.
  void progress() {
    for (std::size_t i = 0; i < started_; ++i) {
      Bucket& k = buckets_[i];
      if (k.state == State::exchanging || k.state == State::gathering) {
        int done = 0;
        check(MPI_Test(&k.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) k.state = k.state == State::exchanging ? State::exchanged : State::done;
      }
    }
    start_gathers();
  }

  /// Waits until every started bucket is summed on every rank.
  void finish() {
    for (std::size_t i = 0; i < started_; ++i) {
      Bucket& k = buckets_[i];
      while (k.state != State::done) {
        if (k.state == State::exchanging || k.state == State::gathering) {
          check(MPI_Wait(&k.request, MPI_STATUS_IGNORE), "MPI_Wait");
          k.state = k.state == State::exchanging ? State::exchanged : State::done;
        }
        start_gathers();
      }
    }
    started_ = gathered_ = 0;
  }

  /// Buckets started since begin().
  std::size_t started() const { return started_; }

 private:
  enum class State { exchanging, exchanged, gathering, done };
  struct Bucket {
    BucketRange range;
    State state = State::done;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<int> count, displ, from_count, from_displ;
    Scalar* scratch = nullptr;
  };

  // Sums the exchanged buckets, in bucket order, and starts their gathers.
  void start_gathers() {
    while (gathered_ < started_ && buckets_[gathered_].state == State::exchanged) {
      Bucket& k = buckets_[gathered_++];
      const std::size_t mine = std::size_t(k.count[std::size_t(rank_)]);
      Scalar* out = data_ + k.range.begin + std::size_t(k.displ[std::size_t(rank_)]);
      for (std::size_t i = 0; i < mine; ++i) {
        Scalar s = k.scratch[i];
        for (int r = 1; r < p_; ++r) s += k.scratch[std::size_t(r) * mine + i];
        out[i] = s;
      }
      k.state = State::gathering;
      check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data_ + k.range.begin,
                            k.count.data(), k.displ.data(), datatype<Scalar>(), gather_,
                            &k.request),
            "MPI_Iallgatherv");
    }
  }

  Scalar* data_ = nullptr;
  Scalar* scratch_ = nullptr;
  std::size_t scratch_used_ = 0;
  MPI_Comm exchange_ = MPI_COMM_NULL, gather_ = MPI_COMM_NULL;
  int p_ = 1, rank_ = 0;
  std::vector<Bucket> buckets_;  // kept from step to step: no allocation once grown
  std::size_t started_ = 0, gathered_ = 0;
};

}  // namespace detail
}  // namespace mpi
}  // namespace gradsum
