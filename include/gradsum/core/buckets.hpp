// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a sum is cut into buckets, without MPI: the cut Allreduce's buckets
/// make (mpi/buckets.hpp) and the step model predicts (plan/overlap.hpp).

#include <cstddef>
#include <vector>

namespace gradsum {

/// How Allreduce cuts what it sums into buckets (in values, not bytes).
/// Buckets are cut from the end of the buffer down, the order in which a
/// backward pass finishes a network's gradient: first `first` values, then
/// `size` values each, the last bucket holding what is left; each at most
/// mpi::message_elements(). `size` 0 (the default): no buckets, one
/// MPI_Allreduce.
struct Buckets {
  std::size_t first = 0;  ///< values in the first bucket (0: `size`)
  std::size_t size = 0;   ///< values in each later bucket (0: no buckets)
  bool enabled() const { return size > 0; }
};

/// How Allreduce's rank-order sums (those of its buckets) cross the ranks.
/// Every choice adds each element's values in rank order, so all give the
/// same bits (mpi/buckets.hpp).
enum class SumAlgorithm {
  automatic,  ///< two_level when the ranks fill more than one node with more than one rank
              ///< each, in blocks of consecutive ranks; else flat
  flat,       ///< every rank exchanges with every rank
  two_level   ///< inside each node first, one value per element across each node boundary
};

/// How Allreduce's rank-order sums cross the ranks: the algorithm and what
/// counts as a node.
struct SumLayout {
  SumAlgorithm algorithm = SumAlgorithm::automatic;
  /// 0: a node is the ranks that share memory (MPI_COMM_TYPE_SHARED); K > 0:
  /// ranks [iK, (i + 1)K) form node i (to try two-level sums on one machine).
  int ranks_per_node = 0;
};

/// The name of `a` on gradsum-train's command line: auto, flat, two-level.
inline const char* name(SumAlgorithm a) {
  return a == SumAlgorithm::flat ? "flat" : a == SumAlgorithm::two_level ? "two-level" : "auto";
}

namespace detail {

/// A bucket: values [begin, end) of the buffer.
struct BucketRange {
  std::size_t begin = 0, end = 0;
};

/// The buckets of values [0, n), from the end down (see Buckets), none
/// longer than `limit` values (at least 1); none when n is 0. `b` must be
/// enabled.
inline void cut_buckets(std::size_t n, const Buckets& b, std::size_t limit,
                        std::vector<BucketRange>& out) {
  std::size_t end = n;
  std::size_t want = b.first > 0 ? b.first : b.size;
  while (end > 0) {
    std::size_t m = want < limit ? want : limit;
    if (m > end) m = end;
    out.push_back({end - m, end});
    end -= m;
    want = b.size;
  }
}

}  // namespace detail
}  // namespace gradsum
