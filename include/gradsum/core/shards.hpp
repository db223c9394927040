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
  /// Number of parameters in the block.
  std::int64_t size() const { return end - begin; }
  /// Whether the block is a part of `num_parameters` rather than all of them.
  bool partial(std::int64_t num_parameters) const {
    return begin != 0 || end != num_parameters;
  }
};

}  // namespace gradsum
