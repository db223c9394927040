// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// ParameterShard: the block of the parameter vector one rank updates when
/// the optimizer state is sharded (ZeRO stage 1), and how the blocks are cut.

#include <cstdint>
#include <vector>

namespace gradsum {

/// Parameters [begin, end) of a vector: the block whose optimizer state one
/// rank keeps and whose update it computes. The whole vector when the
/// state is not sharded.
struct ParameterShard {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  /// Number of parameters in the block.
  std::int64_t size() const { return end - begin; }
  /// Whether the block is a part of `num_parameters` rather than all of them.
  bool partial(std::int64_t num_parameters) const {
    return begin != 0 || end != num_parameters;
  }
};

/// The p + 1 boundaries of `parts` consecutive blocks of `n` values, as
/// even as integers allow: block k is [n k / p, n (k + 1) / p). Depends on
/// n and p alone, so every rank cuts alike and a checkpoint (which keeps
/// whole vectors) resumes on any number of ranks.
inline std::vector<std::int64_t> shard_bounds(std::int64_t n, int parts) {
  std::vector<std::int64_t> bounds(std::size_t(parts) + 1);
  for (int k = 0; k <= parts; ++k) bounds[std::size_t(k)] = n * k / parts;
  return bounds;
}

/// Block `k` of shard_bounds(n, parts).
inline ParameterShard shard_of(std::int64_t n, int parts, int k) {
  return ParameterShard{n * k / parts, n * (k + 1) / parts};
}

}  // namespace gradsum
