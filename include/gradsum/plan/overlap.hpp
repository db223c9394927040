// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The step model for buckets sent while the backward pass runs: given when
/// each part of the gradient became final in a step (a backward profile,
/// which BackwardRecorder records from a real step), the
/// buckets' cut and a link, predicts when each bucket starts and ends and
/// how much communication the step still waits for after its backward
/// pass (the exposed communication), and picks a bucket size and a sum
/// algorithm.
///
/// The flat sum sends one bucket at a time, in the order they are cut (the
/// output layer's first), each taking ring_allreduce_seconds of its bytes
/// (gradsum's rank-order sum moves what a ring moves: 2 (p - 1) / p of the
/// bucket per rank, 2 (p - 1) latencies). A bucket starts at the first
/// moment its values are all final and the bucket before it has ended.
/// One message (no buckets) starts at the end of the backward pass.
///
/// The two-level sum (plan/algorithms.hpp) is a pipeline: each phase (the
/// node's exchange, each hop of the chain, the broadcast, the node's
/// gather) takes one bucket at a time, in order, so bucket k + 1 takes hop
/// 1 while bucket k takes hop 2; a bucket ends after its q - 1 hops, the
/// broadcast and the gather. Within one node it is the flat sum on the
/// node's link.
///
/// What it leaves out: that MPI moves a non-blocking collective only inside
/// MPI calls (the step calls them between layers, so a long layer with a
/// bucket in flight can stall it), that computing and sending share memory
/// and cores, and that a node's exchanges and gathers, and the broadcast
/// and the chain, share links.

#include <gradsum/core/buckets.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/plan/algorithms.hpp>
#include <gradsum/plan/cost_model.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <vector>

namespace gradsum {
namespace plan {

/// A moment of the backward pass: `seconds` after the step began, every
/// gradient value at index `from` or later is final.
struct FinalPoint {
  double seconds = 0;
  std::size_t from = 0;
};

/// Records the backward profile of the one step run in its lifetime on
/// this thread, timed from its construction: construct it just before a step
/// (one whose aggregation sends one message or none, which leaves the
/// backward pass's reports to it), then read profile(). Indices count from
/// the lowest address reported: a network's first layer with parameters
/// begins its gradient (true of every composition gradsum builds).
class BackwardRecorder final : public gradsum::detail::BackwardListener {
 public:
  BackwardRecorder() : scope_(this), start_(std::chrono::steady_clock::now()) {}

  void final_from(const void* first) override {
    const std::chrono::duration<double> since = std::chrono::steady_clock::now() - start_;
    reports_.push_back({since.count(), static_cast<const char*>(first)});
  }

  /// The reports as a profile of values of `scalar_bytes` bytes, ending
  /// when the last report came with the whole gradient final. Empty when
  /// nothing reported (a model that is not a composition).
  std::vector<FinalPoint> profile(std::size_t scalar_bytes) const {
    std::vector<FinalPoint> out;
    if (reports_.empty()) return out;
    const char* base = reports_.front().first;
    for (const Report& r : reports_) base = std::min(base, r.first);
    for (const Report& r : reports_)
      out.push_back({r.seconds, std::size_t(r.first - base) / scalar_bytes});
    out.back().from = 0;
    return out;
  }

 private:
  struct Report {
    double seconds;
    const char* first;
  };
  gradsum::detail::ScopedBackwardListener scope_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Report> reports_;
};

/// A backward profile assumed, for a job not yet run: the step's compute of
/// `compute_seconds` spends its last two thirds in the backward pass (the
/// usual share: the backward pass does twice the forward's products), over
/// `layers` layers of equal size and time, the last layer's n / layers
/// values final first.
inline std::vector<FinalPoint> even_backward(double compute_seconds, std::size_t n, int layers) {
  if (!(compute_seconds >= 0) || compute_seconds > std::numeric_limits<double>::max() ||
      layers < 1)
    fail("gradsum::plan::even_backward: compute_seconds must be finite and non-negative and "
         "layers at least 1; got ", compute_seconds, " and ", layers);
  std::vector<FinalPoint> out;
  for (int k = 1; k <= layers; ++k) {
    const double done = double(k) / layers;
    out.push_back({compute_seconds * (1.0 + 2.0 * done) / 3.0,
                   k == layers ? 0 : std::size_t(double(n) * (1.0 - done))});
  }
  return out;
}

/// What a bucket plan costs in one step.
struct OverlapPrediction {
  std::size_t buckets = 0;          ///< messages (1: one message)
  std::size_t early_buckets = 0;    ///< buckets final (and started by the step) before the
                                    ///< backward pass ended, as Allreduce::early_buckets counts
  double backward_end_seconds = 0;  ///< when the whole gradient was first final
  double communication_seconds = 0; ///< every bucket's time alone (not pipelined), summed
  double exposed_seconds = 0;       ///< the last bucket's end past backward_end_seconds
  SumAlgorithm algorithm = SumAlgorithm::flat;  ///< the sum priced (never automatic)
};

namespace detail {

inline void check_profile(const std::vector<FinalPoint>& profile, std::size_t n) {
  if (profile.empty() || profile.back().from != 0)
    fail("gradsum::plan::predict_overlap: the backward profile must end with the whole gradient "
         "final (a point with from = 0)");
  for (std::size_t i = 0; i < profile.size(); ++i) {
    const FinalPoint& p = profile[i];
    if (!(p.seconds >= 0) || p.seconds > std::numeric_limits<double>::max() || p.from > n)
      fail("gradsum::plan::predict_overlap: profile point ", i, " (", p.seconds, " s, from ",
           p.from, ") must have finite non-negative seconds and from at most ", n);
    if (i > 0 && (p.seconds < profile[i - 1].seconds || p.from > profile[i - 1].from))
      fail("gradsum::plan::predict_overlap: profile point ", i,
           " goes back in time or in the gradient; points run forward in time, from down");
  }
}

/// Whether gradsum's two-level sum differs from the flat one on `workers`
/// ranks: more than one node, more than one rank on each.
inline bool two_level_applies(const plan::Nodes& nodes, int workers) {
  return nodes.ranks_per_node > 1 && workers > nodes.ranks_per_node;
}

/// The links a step's buckets cross, in the order they are cut: send()
/// says when a bucket ready at `ready` ends.
class SumPipeline {
 public:
  SumPipeline(SumAlgorithm algorithm, const plan::Network& network, const plan::Nodes& nodes,
              int workers)
      : network_(network), nodes_(nodes), workers_(workers),
        pipelined_(algorithm == SumAlgorithm::two_level && workers > nodes.ranks_per_node) {
    // Two-level within one node is the flat sum on the node's link.
    if (algorithm == SumAlgorithm::two_level && !pipelined_) network_ = nodes.link;
  }

  /// When a bucket of `bytes`, all final at `ready`, ends.
  double send(double ready, double bytes) {
    if (!pipelined_) {  // exchange and gather hold the one link together
      const double cost = plan::ring_allreduce_seconds(network_, bytes, workers_);
      alone_ += cost;
      gather_free_ = std::max(ready, gather_free_) + cost;
      return gather_free_;
    }
    const plan::TwoLevelStages s = plan::two_level_stages(network_, nodes_, bytes, workers_);
    alone_ += s.seconds();
    exchange_free_ = std::max(ready, exchange_free_) + s.exchange;
    // Buffered hops: a bucket enters the chain when the one before left hop
    // 1, and leaves hop q-1 no sooner than one hop after it (exact for the
    // cut's sizes: any first bucket, then equal ones, then a smaller last).
    const double enter = std::max(exchange_free_, hop_free_);
    hop_free_ = enter + s.hop;
    chain_end_ = std::max(enter + (s.nodes - 1) * s.hop, chain_end_ + s.hop);
    broadcast_free_ = std::max(chain_end_, broadcast_free_) + s.broadcast;
    gather_free_ = std::max(broadcast_free_, gather_free_) + s.gather;
    return gather_free_;
  }
  /// Every bucket's time alone, summed.
  double alone_seconds() const { return alone_; }

 private:
  plan::Network network_;
  plan::Nodes nodes_;
  int workers_;
  bool pipelined_;
  double alone_ = 0, exchange_free_ = 0, hop_free_ = 0, chain_end_ = 0, broadcast_free_ = 0,
         gather_free_ = 0;
};

/// predict_overlap for a flat or a two-level sum.
inline plan::OverlapPrediction predict_overlap_of(SumAlgorithm algorithm,
                                                  const std::vector<plan::FinalPoint>& profile,
                                                  std::size_t n, double scalar_bytes,
                                                  const Buckets& buckets, SumPipeline link,
                                                  std::size_t limit) {
  plan::OverlapPrediction out;
  out.algorithm = algorithm;
  // The backward pass ends at the first point with the whole gradient final
  // (a network reports once more after its last layer's report).
  std::size_t end = 0;
  while (profile[end].from > 0) ++end;
  out.backward_end_seconds = profile[end].seconds;
  std::vector<gradsum::detail::BucketRange> ranges;
  if (buckets.enabled())
    gradsum::detail::cut_buckets(n, buckets, limit, ranges);
  else if (n > 0)
    gradsum::detail::cut_buckets(n, Buckets{0, n}, limit, ranges);
  double last_end = 0;
  std::size_t point = 0;
  for (const auto& range : ranges) {
    // The first moment every value of the bucket is final.
    while (profile[point].from > range.begin) ++point;
    const double ready = buckets.enabled() ? profile[point].seconds : out.backward_end_seconds;
    if (buckets.enabled() && ready < out.backward_end_seconds) ++out.early_buckets;
    last_end = link.send(ready, double(range.end - range.begin) * scalar_bytes);
  }
  out.communication_seconds = link.alone_seconds();
  out.buckets = ranges.size();
  if (last_end > out.backward_end_seconds) out.exposed_seconds = last_end - out.backward_end_seconds;
  return out;
}

}  // namespace detail

/// The step with `n` gradient values of `scalar_bytes` each, whose
/// backward pass made them final as `profile` says, summed over `workers`
/// by `algorithm` (between nodes on `network`; `nodes` says how ranks share
/// nodes, for two_level) in `buckets` (not enabled: one message), none
/// longer than `limit` values. `automatic` prices the two-level sum where
/// it applies (more than one node, more than one rank on each) and keeps
/// it where it exposes less than the flat one; the result names the sum
/// priced.
inline OverlapPrediction predict_overlap(const std::vector<FinalPoint>& profile, std::size_t n,
                                         double scalar_bytes, const Buckets& buckets,
                                         const Network& network, int workers,
                                         SumAlgorithm algorithm, const Nodes& nodes,
                                         std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  network.validate();
  nodes.validate();
  detail::check_profile(profile, n);
  if (!(scalar_bytes > 0) || workers < 1 || limit < 1)
    fail("gradsum::plan::predict_overlap: scalar_bytes must be positive, workers and limit at "
         "least 1; got ", scalar_bytes, ", ", workers, ", ", limit);
  auto price = [&](SumAlgorithm a) {
    return detail::predict_overlap_of(a, profile, n, scalar_bytes, buckets,
                                      detail::SumPipeline(a, network, nodes, workers), limit);
  };
  if (algorithm != SumAlgorithm::automatic) return price(algorithm);
  const OverlapPrediction flat = price(SumAlgorithm::flat);
  if (!detail::two_level_applies(nodes, workers)) return flat;
  const OverlapPrediction two = price(SumAlgorithm::two_level);
  return two.exposed_seconds < flat.exposed_seconds ? two : flat;
}

/// predict_overlap with the flat sum.
inline OverlapPrediction predict_overlap(const std::vector<FinalPoint>& profile, std::size_t n,
                                         double scalar_bytes, const Buckets& buckets,
                                         const Network& network, int workers,
                                         std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  return predict_overlap(profile, n, scalar_bytes, buckets, network, workers, SumAlgorithm::flat,
                         Nodes{}, limit);
}

/// A bucket size and a sum algorithm, and what they cost.
struct BucketChoice {
  std::size_t size = 0;                         ///< values per bucket (0: one message)
  SumAlgorithm algorithm = SumAlgorithm::flat;  ///< never automatic
  OverlapPrediction prediction;                 ///< the step with them
};

/// The bucket size (in values) among `candidates` (0: one message) and the
/// sum (`algorithm`, or under `automatic` the one predict_overlap keeps)
/// whose predicted exposed communication is least; of equal sizes, the
/// larger (fewer messages); of equal sums, the flat one.
inline BucketChoice choose_buckets(const std::vector<FinalPoint>& profile, std::size_t n,
                                   double scalar_bytes, const Network& network, int workers,
                                   const std::vector<std::size_t>& candidates,
                                   SumAlgorithm algorithm, const Nodes& nodes) {
  if (candidates.empty()) fail("gradsum::plan::choose_buckets: no candidate sizes");
  BucketChoice best;
  bool first = true;
  for (std::size_t size : candidates) {
    const OverlapPrediction p = predict_overlap(profile, n, scalar_bytes, Buckets{0, size},
                                                network, workers, algorithm, nodes);
    const bool larger = size == 0 || (best.size != 0 && size > best.size);
    const double least = best.prediction.exposed_seconds;
    if (first || p.exposed_seconds < least || (p.exposed_seconds == least && larger)) {
      best = {size, p.algorithm, p};
      first = false;
    }
  }
  return best;
}

/// The bucket size (in values) among `candidates` (0: one message) whose
/// predicted exposed communication with the flat sum is least; of equals,
/// the larger (fewer messages).
inline std::size_t choose_bucket_size(const std::vector<FinalPoint>& profile, std::size_t n,
                                      double scalar_bytes, const Network& network, int workers,
                                      const std::vector<std::size_t>& candidates) {
  if (candidates.empty()) fail("gradsum::plan::choose_bucket_size: no candidate sizes");
  return choose_buckets(profile, n, scalar_bytes, network, workers, candidates,
                        SumAlgorithm::flat, Nodes{})
      .size;
}

}  // namespace plan
}  // namespace gradsum
