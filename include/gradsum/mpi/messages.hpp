// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The collectives gradsum makes, for any number of elements: MPI counts
/// are ints, so every call here cuts what it carries into messages of at
/// most message_elements() values (2^31 - 1 unless lowered), and each
/// element still travels, and is reduced, in exactly one message.

#include <gradsum/core/error.hpp>
#include <gradsum/mpi/communicator.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradsum {
namespace mpi {

/// The most elements one MPI call can carry: its count is an int.
constexpr std::size_t max_message_elements = std::size_t(2147483647);

namespace detail {

inline std::size_t& message_elements_setting() {
  static std::size_t limit = max_message_elements;
  return limit;
}

/// Runs piece(first, count) over [0, n) in pieces of at most `limit`
/// elements; once, with count 0, when n is 0 (every rank calls as often).
template <class Piece>
void in_pieces(std::size_t n, std::size_t limit, Piece&& piece) {
  std::size_t done = 0;
  do {
    const std::size_t count = std::min(n - done, limit);
    piece(done, count);
    done += count;
  } while (done < n);
}

inline std::size_t clamp_piece(std::int64_t total, std::int64_t first, std::int64_t limit) {
  return std::size_t(std::max<std::int64_t>(0, std::min(total - first, limit)));
}

}  // namespace detail

/// The most elements gradsum puts in one MPI message (every collective it
/// makes: sums, gathers, exchanges, broadcasts). max_message_elements by
/// default; lower it for an MPI library that fails on messages of 2 GiB or
/// more, or to exercise the splitting in tests.
inline std::size_t message_elements() { return detail::message_elements_setting(); }

/// Sets message_elements() (1 to max_message_elements) and returns the
/// previous value. Every rank must set the same value, before the
/// collectives it affects, from one thread.
inline std::size_t set_message_elements(std::size_t limit) {
  if (limit < 1 || limit > max_message_elements)
    fail("gradsum::mpi::set_message_elements: ", limit, " elements per message; expected 1 to ",
         max_message_elements);
  const std::size_t previous = detail::message_elements_setting();
  detail::message_elements_setting() = limit;
  return previous;
}

/// In-place MPI_Allreduce of `n` values of `type` (`bytes` each) at
/// `data`, by `op`, in messages of at most message_elements(). Collective;
/// every rank passes the same n.
inline void allreduce_in_place(void* data, std::size_t n, MPI_Datatype type, std::size_t bytes,
                               MPI_Op op, MPI_Comm comm) {
  auto* at = static_cast<unsigned char*>(data);
  detail::in_pieces(n, message_elements(), [&](std::size_t first, std::size_t count) {
    check(MPI_Allreduce(MPI_IN_PLACE, at + first * bytes, int(count), type, op, comm),
          "MPI_Allreduce");
  });
}

/// MPI_Bcast of `n` values of `type` (`bytes` each) at `data` from `root`,
/// in messages of at most message_elements(). Collective.
inline void broadcast(void* data, std::size_t n, MPI_Datatype type, std::size_t bytes, int root,
                      MPI_Comm comm) {
  auto* at = static_cast<unsigned char*>(data);
  detail::in_pieces(n, message_elements(), [&](std::size_t first, std::size_t count) {
    check(MPI_Bcast(at + first * bytes, int(count), type, root, comm), "MPI_Bcast");
  });
}

/// MPI_Allgather of `n` values of `type` (`bytes` each) per rank: rank k's
/// values land at recv + k n. `send` may be MPI_IN_PLACE (this rank's
/// values already at their place in `recv`). A piece of the values goes to
/// its place in every rank's block through a receive type whose extent is
/// the whole block. Collective; every rank passes the same n.
inline void allgather(const void* send, void* recv, std::size_t n, MPI_Datatype type,
                      std::size_t bytes, MPI_Comm comm) {
  const bool in_place = send == MPI_IN_PLACE;
  const auto* from = static_cast<const unsigned char*>(send);
  auto* to = static_cast<unsigned char*>(recv);
  if (n <= message_elements()) {
    check(MPI_Allgather(in_place ? MPI_IN_PLACE : send, int(n), type, recv, int(n), type, comm),
          "MPI_Allgather");
    return;
  }
  detail::in_pieces(n, message_elements(), [&](std::size_t first, std::size_t count) {
    MPI_Datatype piece = MPI_DATATYPE_NULL, block = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(int(count), type, &piece), "MPI_Type_contiguous");
    int code = MPI_Type_create_resized(piece, 0, MPI_Aint(n * bytes), &block);
    MPI_Type_free(&piece);
    check(code, "MPI_Type_create_resized");
    code = MPI_Type_commit(&block);
    if (code == MPI_SUCCESS)
      code = MPI_Allgather(in_place ? MPI_IN_PLACE : from + first * bytes, int(count), type,
                           to + first * bytes, 1, block, comm);
    MPI_Type_free(&block);
    check(code, "MPI_Allgather");
  });
}

namespace detail {

/// The counts and displacements of one round of in_block_rounds, kept by
/// the caller so that repeated calls allocate nothing.
struct BlockRound {
  std::vector<int> count, displacement;
};

/// Runs round(counts, displacements, first) for the blocks
/// [bounds[k], bounds[k + 1]) of one vector: once with whole blocks when
/// the vector fits in message_elements(), else in rounds of at most
/// message_elements() / p values per block, the values from `first` on.
template <class Round>
void in_block_rounds(const std::vector<std::int64_t>& bounds, BlockRound& scratch,
                     const char* caller, Round&& round) {
  const std::size_t p = bounds.size() - 1;
  if (bounds[p] > std::int64_t(max_message_elements))
    fail("gradsum::mpi::", caller, ": blocks of ", bounds[p], " values in all; expected at most ",
         max_message_elements);
  std::int64_t most = 0;
  for (std::size_t k = 0; k < p; ++k) most = std::max(most, bounds[k + 1] - bounds[k]);
  const bool whole = std::size_t(bounds[p]) <= message_elements();
  const std::int64_t piece =
      whole ? std::max<std::int64_t>(1, most)
            : std::max<std::int64_t>(1, std::int64_t(message_elements() / p));
  std::vector<int>& count = scratch.count;
  std::vector<int>& displacement = scratch.displacement;
  count.resize(p);
  displacement.resize(p);
  for (std::int64_t first = 0; first == 0 || first < most; first += piece) {
    for (std::size_t k = 0; k < p; ++k) {
      count[k] = int(clamp_piece(bounds[k + 1] - bounds[k], first, piece));
      displacement[k] = int(std::min(bounds[k] + first, bounds[k + 1]));
    }
    round(count, displacement, first);
  }
}

}  // namespace detail

/// Block k = [bounds[k], bounds[k + 1]) of `data` (values of `type`,
/// `bytes` each), which rank k holds, copied into every rank's `data`, in
/// place (MPI_Allgatherv; in rounds when the vector exceeds
/// message_elements()). `bounds`: p + 1 offsets, the same on every rank;
/// `scratch` holds the rounds' counts. Collective.
inline void allgather_blocks(void* data, const std::vector<std::int64_t>& bounds,
                             MPI_Datatype type, MPI_Comm comm, detail::BlockRound& scratch) {
  detail::in_block_rounds(bounds, scratch, "allgather_blocks", [&](const std::vector<int>& count,
                                                          const std::vector<int>& displacement,
                                                          std::int64_t) {
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, count.data(),
                         displacement.data(), type, comm),
          "MPI_Allgatherv");
  });
}

/// Rank k's block of bounds[k + 1] - bounds[k] values at `mine` gathered
/// into `all` (bounds[p] values) on rank `root`, at offset bounds[k]
/// (MPI_Gatherv; in rounds when the vector exceeds message_elements()).
/// `all` is ignored on the other ranks. Collective.
inline void gather_blocks(const void* mine, void* all, const std::vector<std::int64_t>& bounds,
                          MPI_Datatype type, std::size_t bytes, int root, MPI_Comm comm,
                          detail::BlockRound& scratch) {
  int me = 0;
  check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  const auto* from = static_cast<const unsigned char*>(mine);
  detail::in_block_rounds(bounds, scratch, "gather_blocks", [&](const std::vector<int>& count,
                                                       const std::vector<int>& displacement,
                                                       std::int64_t first) {
    const std::int64_t start =
        std::min(first, bounds[std::size_t(me) + 1] - bounds[std::size_t(me)]);
    check(MPI_Gatherv(from + std::size_t(start) * bytes, count[std::size_t(me)], type, all,
                      count.data(), displacement.data(), type, root, comm),
          "MPI_Gatherv");
  });
}

/// Every rank's `mine` (counts[k] values on rank k, known to every rank),
/// concatenated in rank order. Pieces of at most message_elements() / p
/// values per rank go in rounds through one MPI_Allgatherv each when the
/// whole exceeds message_elements(). Collective.
template <class T>
std::vector<T> allgatherv(const std::vector<T>& mine, const std::vector<std::int64_t>& counts,
                          const Communicator& comm) {
  const std::size_t p = counts.size();
  std::vector<std::size_t> start(p + 1, 0);
  for (std::size_t k = 0; k < p; ++k) start[k + 1] = start[k] + std::size_t(counts[k]);
  std::vector<T> all(start[p]);
  const std::int64_t piece = std::max<std::int64_t>(1, std::int64_t(message_elements() / p));
  const std::int64_t most = *std::max_element(counts.begin(), counts.end());
  const bool whole = start[p] <= message_elements();
  std::vector<int> rcount(p), rdispl(p);
  std::vector<T> round;
  for (std::int64_t first = 0; first == 0 || first < most; first += piece) {
    std::size_t at = 0;
    for (std::size_t k = 0; k < p; ++k) {
      rcount[k] = int(whole ? counts[k] : std::int64_t(detail::clamp_piece(counts[k], first, piece)));
      rdispl[k] = int(at);
      at += std::size_t(rcount[k]);
    }
    T* into = all.data();
    if (!whole) {
      round.resize(at);
      into = round.data();
    }
    const int me = comm.rank();
    const T* piece_of_mine = mine.data() + std::min(std::size_t(first), mine.size());
    check(MPI_Allgatherv(piece_of_mine, rcount[std::size_t(me)], datatype<T>(),
                         into, rcount.data(), rdispl.data(), datatype<T>(), comm.get()),
          "MPI_Allgatherv");
    if (whole) break;
    for (std::size_t k = 0; k < p; ++k)
      std::copy(round.begin() + rdispl[k], round.begin() + rdispl[k] + rcount[k],
                all.begin() + std::ptrdiff_t(start[k] + std::size_t(first)));
  }
  return all;
}

/// Every rank's `mine` concatenated in rank order; `counts` receives how
/// many values each rank gave. Collective.
template <class T>
std::vector<T> allgatherv(const std::vector<T>& mine, const Communicator& comm,
                          std::vector<std::int64_t>& counts) {
  const std::int64_t count = std::int64_t(mine.size());
  counts.assign(std::size_t(comm.size()), 0);
  check(MPI_Allgather(&count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm.get()),
        "MPI_Allgather");
  return allgatherv(mine, counts, comm);
}

/// Sends send[k] to rank k (MPI_Alltoallv); returns what every rank sent
/// here, in rank order, and in `from` how many values came from each.
/// When some rank would send or receive more than message_elements(),
/// every rank exchanges in rounds of at most message_elements() / p values
/// per pair. Collective.
template <class T>
std::vector<T> alltoallv(const std::vector<std::vector<T>>& send, const Communicator& comm,
                         std::vector<std::int64_t>& from) {
  const std::size_t p = std::size_t(comm.size());
  std::vector<std::int64_t> counts(p);
  for (std::size_t k = 0; k < p; ++k) counts[k] = std::int64_t(send[k].size());
  from.assign(p, 0);
  check(MPI_Alltoall(counts.data(), 1, MPI_INT64_T, from.data(), 1, MPI_INT64_T, comm.get()),
        "MPI_Alltoall");
  // [0]: the most any rank sends or receives; [1]: the most one pair carries.
  std::int64_t most[2] = {0, 0};
  std::int64_t sent = 0, received = 0;
  for (std::size_t k = 0; k < p; ++k) {
    sent += counts[k];
    received += from[k];
    most[1] = std::max({most[1], counts[k], from[k]});
  }
  most[0] = std::max(sent, received);
  check(MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_INT64_T, MPI_MAX, comm.get()), "MPI_Allreduce");
  const bool whole = std::size_t(most[0]) <= message_elements();
  const std::int64_t piece =
      whole ? std::max<std::int64_t>(1, most[1])
            : std::max<std::int64_t>(1, std::int64_t(message_elements() / p));
  std::vector<std::size_t> start(p + 1, 0);
  for (std::size_t k = 0; k < p; ++k) start[k + 1] = start[k] + std::size_t(from[k]);
  std::vector<T> out(start[p]), packed, round;
  std::vector<int> scount(p), sdispl(p), rcount(p), rdispl(p);
  for (std::int64_t first = 0; first == 0 || first < most[1]; first += piece) {
    packed.clear();
    std::size_t at = 0;
    for (std::size_t k = 0; k < p; ++k) {
      const std::size_t s = detail::clamp_piece(counts[k], first, piece);
      scount[k] = int(s);
      sdispl[k] = int(packed.size());
      if (s > 0)
        packed.insert(packed.end(), send[k].begin() + first,
                      send[k].begin() + first + std::ptrdiff_t(s));
      rcount[k] = int(detail::clamp_piece(from[k], first, piece));
      rdispl[k] = int(at);
      at += std::size_t(rcount[k]);
    }
    round.resize(at);
    check(MPI_Alltoallv(packed.data(), scount.data(), sdispl.data(), datatype<T>(), round.data(),
                        rcount.data(), rdispl.data(), datatype<T>(), comm.get()),
          "MPI_Alltoallv");
    for (std::size_t k = 0; k < p; ++k)
      std::copy(round.begin() + rdispl[k], round.begin() + rdispl[k] + rcount[k],
                out.begin() + std::ptrdiff_t(start[k] + std::size_t(first)));
  }
  return out;
}

}  // namespace mpi
}  // namespace gradsum
