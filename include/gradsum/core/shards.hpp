// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// ParameterShard: the block of the parameter vector one rank updates when
/// the optimizer state is sharded (ZeRO stage 1; the blocks are cut as
/// gradsum::partition cuts rows).

#include <cstdint>

namespace gradsum {

/// Parameters [begin, end) of a vector: the block whose optimizer state one
/// rank keeps and whose update it computes. The whole vector when the
/// state is not sharded.
struct ParameterShard {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  /// Whether the state is split over several ranks: true on every one of
  /// them, even where a rank's block happens to be all of the parameters
  /// (one parameter on two ranks), so that every rank takes the same
  /// collective path.
  bool split = false;
  /// Number of parameters in the block.
  std::int64_t size() const { return end - begin; }
  /// Whether the block is a part of `num_parameters` rather than all of
  /// them, or split over the ranks; the same on every rank of a split.
  bool partial(std::int64_t num_parameters) const {
    return split || begin != 0 || end != num_parameters;
  }
};

}  // namespace gradsum
