// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Where the ranks of a sum lie: which ranks form a node, found once by a
/// collective, and the communicators a two-level sum runs on (the
/// engine is in mpi/buckets.hpp).

#include <gradsum/core/buckets.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/mpi/communicator.hpp>

#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace gradsum {
namespace mpi {
namespace detail {

/// The ranks of a communicator as nodes: node i holds ranks
/// [first[i], first[i + 1]) when `consecutive`.
struct NodeMap {
  std::vector<int> first;  ///< each node's lowest rank, ascending, then the rank count
  bool consecutive = true; ///< every node a block of consecutive ranks
  std::string why;         ///< when not: two ranks that show it
  int nodes() const { return int(first.size()) - 1; }
  /// The fewest ranks on one node.
  int fewest() const {
    int least = first.back();
    for (std::size_t i = 0; i + 1 < first.size(); ++i) least = std::min(least, first[i + 1] - first[i]);
    return least;
  }
  /// The node of `rank` (consecutive only).
  int node_of(int rank) const {
    return int(std::upper_bound(first.begin(), first.end(), rank) - first.begin()) - 1;
  }
};

/// The nodes of ranks 0, 1, … whose nodes' lowest ranks are `lowest_of`.
inline NodeMap map_nodes(const std::vector<int>& lowest_of) {
  NodeMap map;
  const int p = int(lowest_of.size());
  for (int r = 0; r < p; ++r) {
    const int at = lowest_of[std::size_t(r)];
    if (at == r) {
      map.first.push_back(r);
    } else if (map.consecutive && (at > r || at != lowest_of[std::size_t(r - 1)])) {
      map.consecutive = false;
      map.why = concat("ranks ", at, " and ", r, " share a node that rank ", r - 1, " is not on");
    }
  }
  map.first.push_back(p);
  return map;
}

/// The nodes of `comm` (see SumLayout::ranks_per_node): every rank learns
/// every rank's node from the lowest rank sharing it. Collective.
inline NodeMap find_nodes(const Communicator& comm, int ranks_per_node) {
  const int rank = comm.rank();
  int lowest = ranks_per_node > 0 ? rank - rank % ranks_per_node : rank;
  if (ranks_per_node == 0) {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    const int code = MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    check(code, "MPI_Allreduce");
  }
  std::vector<int> lowest_of(std::size_t(comm.size()));
  check(MPI_Allgather(&lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm.get()),
        "MPI_Allgather");
  return map_nodes(lowest_of);
}

/// The part of `comm` whose ranks passed `color` (ordered by `key`), owned;
/// nullptr on ranks that passed MPI_UNDEFINED. Collective.
inline std::shared_ptr<Communicator> split(const Communicator& comm, int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  check(MPI_Comm_split(comm.get(), color, key, &part), "MPI_Comm_split");
  if (part == MPI_COMM_NULL) return nullptr;
  std::shared_ptr<Communicator> owned;
  try {
    owned = std::make_shared<Communicator>(part);
  } catch (...) {
    MPI_Comm_free(&part);
    throw;
  }
  MPI_Comm_free(&part);
  return owned;
}

/// What one rank's rank-order sums run on (mpi/buckets.hpp): the node's
/// ranks exchange slices and gather sums (`exchange`, `gather`); local rank
/// j < `columns` of every node adds slice j in a chain across the nodes and
/// receives the sums from the last node (`column`, ordered by node). The
/// flat sum is one node of every rank.
struct Lanes {
  MPI_Comm exchange = MPI_COMM_NULL, gather = MPI_COMM_NULL, column = MPI_COMM_NULL;
  int node = 0, nodes = 1;        ///< this rank's node, the number of nodes
  int local = 0, local_size = 1;  ///< this rank within its node, the node's ranks
  int columns = 1;                ///< the slices of a bucket: the fewest ranks on a node
};

/// The communicators behind Lanes, built once (collective over `comm`).
class NodeCommunicators {
 public:
  /// Flat: every rank one node, on `comm` (for the exchanges) and a
  /// duplicate of it (for the gathers).
  explicit NodeCommunicators(const Communicator& comm) : gather_(std::make_shared<Communicator>(comm.get())) {
    lanes_.exchange = comm.get();
    lanes_.gather = gather_->get();
    lanes_.local = comm.rank();
    lanes_.local_size = lanes_.columns = comm.size();
  }
  /// Two-level over `map`'s nodes (consecutive).
  NodeCommunicators(const Communicator& comm, const NodeMap& map) {
    const int rank = comm.rank(), node = map.node_of(rank);
    exchange_ = split(comm, node, rank);
    gather_ = std::make_shared<Communicator>(exchange_->get());
    lanes_.exchange = exchange_->get();
    lanes_.gather = gather_->get();
    lanes_.node = node;
    lanes_.nodes = map.nodes();
    lanes_.local = exchange_->rank();
    lanes_.local_size = exchange_->size();
    lanes_.columns = map.fewest();
    column_ = split(comm, lanes_.local < lanes_.columns ? lanes_.local : MPI_UNDEFINED, rank);
    if (column_) lanes_.column = column_->get();
  }
  const Lanes& lanes() const { return lanes_; }

 private:
  std::shared_ptr<Communicator> exchange_, gather_, column_;
  Lanes lanes_;
};

}  // namespace detail
}  // namespace mpi
}  // namespace gradsum
