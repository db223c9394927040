// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Blocks of samples in rank-one form, the shape of a one-output linear
/// model's contributions, which the binned reduction deposits a block at a
/// time.

#include <type_traits>

namespace gradsum {
namespace detail {

/// A block of samples whose contributions have the form of a one-output
/// linear model's (Linear's batched path): sample s < m adds
/// scale[s] * row[s][j] (rounded to Scalar) to coordinate j < d, scale[s]
/// to coordinate d and value[s] to coordinate d + 1, for d + 2 coordinates
/// in all. A body of the binned reduction that fills one per index
/// (`using block_type = RankOneBlock<…>` and `operator()(index, block)`)
/// saves it writing every contribution out, and lets the deposit keep a
/// few coordinates' bins in registers for the whole block.
template <class Scalar, int B>
struct RankOneBlock {
  static constexpr int capacity = B;
  int m = 0;
  const Scalar* row[B];
  /// Where known, the rows the next index will bring, else null: the
  /// deposit asks for them while it works on this block's.
  const Scalar* next[B] = {};
  Scalar scale[B];
  Scalar value[B];
};

/// Whether a binned reduction's body fills a RankOneBlock per index.
template <class Body, class = void>
struct is_rank_one_body : std::false_type {};
template <class Body>
struct is_rank_one_body<Body, std::void_t<typename Body::block_type>> : std::true_type {};

}  // namespace detail
}  // namespace gradsum
