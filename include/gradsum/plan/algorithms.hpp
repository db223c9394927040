// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The α-β cost of one sum of `bytes` over p workers, per algorithm: a
/// message costs α (the link's latency) plus its bytes over β (its
/// bandwidth).
///
///     ring, reduce-scatter + all-gather:  2 (p-1)/p · b/β + 2 (p-1) α
///     recursive doubling:                 ceil(log2 p) · (α + b/β)
///     two-level, q nodes of L ranks:      2 [(L-1)/L · b/β_node + (L-1) α_node]
///                                         + (q-1 + ceil(log2 q)) · (α + b/(L β))
///
/// The two-level sum is gradsum's (mpi/buckets.hpp): inside each node an
/// exchange gives local rank j slice j (b/L bytes) of every local rank; a
/// chain carries each slice's partial sums from node 0 to node q-1 (q-1
/// hops, the L slices in parallel); a binomial tree broadcasts the sums
/// from the last node (ceil(log2 q) rounds); a gather inside each node
/// returns the whole sum to every rank.

#include <gradsum/core/error.hpp>
#include <gradsum/plan/cost_model.hpp>

#include <cmath>

namespace gradsum {
namespace plan {

/// How ranks share nodes, for the two-level sum: blocks of `ranks_per_node`
/// consecutive ranks, each block joined by `link` (the Network between
/// nodes joins them all). The defaults: 8 ranks per node on a 50 GB/s,
/// 1 us link.
struct Nodes {
  /// Consecutive ranks on one node, L, in [1, 10^6].
  int ranks_per_node = 8;
  /// The link inside a node, as a rank sees it.
  Network link{50e9, 1e-6};

  /// Rejects values the model cannot use, naming the field and the value.
  void validate() const {
    if (ranks_per_node < 1 || ranks_per_node > 1000000)
      fail("gradsum::plan::Nodes: ranks_per_node must be in [1, 1000000], got ", ranks_per_node);
    if (!(link.bandwidth > 0) || !std::isfinite(link.bandwidth))
      fail("gradsum::plan::Nodes: link.bandwidth must be positive and finite (bytes/s), got ",
           link.bandwidth);
    if (!(link.latency >= 0) || !std::isfinite(link.latency))
      fail("gradsum::plan::Nodes: link.latency must be non-negative and finite (seconds), got ",
           link.latency);
  }
};

namespace detail {

inline void check_sum(const char* function, double bytes, int workers) {
  if (workers < 1) fail("gradsum::plan::", function, ": workers must be at least 1, got ", workers);
  if (!(bytes >= 0) || !std::isfinite(bytes))
    fail("gradsum::plan::", function, ": bytes must be non-negative and finite, got ", bytes);
}

/// ceil(log2 n) for n >= 1.
inline int ceil_log2(long long n) {
  int rounds = 0;
  while ((1LL << rounds) < n) ++rounds;
  return rounds;
}

}  // namespace detail

/// Reduce-scatter then all-gather (gradsum's flat sum: an all-to-all of
/// slices, then an all-gather of their sums) moves what a ring moves:
/// 2 (p-1)/p · bytes / bandwidth + 2 (p-1) · latency; 0 for one worker.
inline double reduce_scatter_allgather_seconds(const Network& network, double bytes, int workers) {
  network.validate();
  detail::check_sum("reduce_scatter_allgather_seconds", bytes, workers);
  return ring_allreduce_seconds(network, bytes, workers);
}

/// Recursive doubling: ceil(log2 p) rounds, each exchanging the whole
/// `bytes` with one partner: ceil(log2 p) · (latency + bytes / bandwidth);
/// 0 for one worker. Fewer latencies than a ring, p / 2 log2 p times its
/// bytes per rank at large p: the choice for small messages.
inline double recursive_doubling_seconds(const Network& network, double bytes, int workers) {
  network.validate();
  detail::check_sum("recursive_doubling_seconds", bytes, workers);
  return detail::ceil_log2(workers) * (network.latency + bytes / network.bandwidth);
}

/// The phases of one two-level sum of `bytes`, each in seconds.
struct TwoLevelStages {
  int nodes = 1;          ///< q = ceil(p / L), L = min(ranks_per_node, p)
  int ranks_per_node = 1; ///< L
  int slices = 1;         ///< the fewest ranks on a node (the last node's): the chains
  double exchange = 0;    ///< inside a node: (L-1) slices of bytes/slices in, (L-1) latencies
  double hop = 0;         ///< one hop of the chain: latency + bytes / (slices · bandwidth)
  double broadcast = 0;   ///< from the last node: ceil(log2 q) hops
  double gather = 0;      ///< inside a node: as the exchange

  /// One sum alone: the exchange, q-1 hops, the broadcast and the gather.
  double seconds() const { return exchange + (nodes - 1) * hop + broadcast + gather; }
};

/// The phases of gradsum's two-level sum of `bytes` over `workers` ranks
/// in `nodes`, between nodes on `network`. A last node with fewer ranks
/// (c of them) cuts every bucket into c slices, so each chain carries
/// bytes / c and each node's c slice owners receive (L-1) of them.
inline TwoLevelStages two_level_stages(const Network& network, const Nodes& nodes, double bytes,
                                       int workers) {
  network.validate();
  nodes.validate();
  detail::check_sum("two_level_stages", bytes, workers);
  TwoLevelStages s;
  s.ranks_per_node = nodes.ranks_per_node < workers ? nodes.ranks_per_node : workers;
  s.nodes = (workers + s.ranks_per_node - 1) / s.ranks_per_node;
  s.slices = workers - (s.nodes - 1) * s.ranks_per_node;
  const double in_node = s.ranks_per_node - 1, slice = bytes / s.slices;
  s.exchange = in_node * slice / nodes.link.bandwidth + in_node * nodes.link.latency;
  s.gather = s.exchange;
  if (s.nodes > 1) s.hop = network.latency + slice / network.bandwidth;
  s.broadcast = detail::ceil_log2(s.nodes) * s.hop;
  return s;
}

/// One two-level sum of `bytes` over `workers` ranks in `nodes` (see the
/// file comment); with one node (workers <= ranks_per_node) the flat sum
/// on the node's link, with one rank per node a chain and a broadcast.
inline double two_level_seconds(const Network& network, const Nodes& nodes, double bytes,
                                int workers) {
  return two_level_stages(network, nodes, bytes, workers).seconds();
}

}  // namespace plan
}  // namespace gradsum
