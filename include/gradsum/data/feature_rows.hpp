// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// One sample's features as the contiguous values a model reads (`const
/// Scalar* x`), from features of any layout: the row itself where it is
/// contiguous (LayoutRight; LayoutStride with column stride 1), else
/// gathered into per-thread room (LayoutLeft; other strides).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/prefetch.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#ifndef GRADSUM_MAX_GATHERED_FEATURES
/// Most features a per-sample kernel gathers into per-thread room when a
/// row is not contiguous (LayoutLeft or strided features); the layer-wise
/// path gathers panels and has no such limit. Define it before including
/// gradsum to change it.
#define GRADSUM_MAX_GATHERED_FEATURES 1024
#endif

namespace gradsum {

/// See GRADSUM_MAX_GATHERED_FEATURES.
constexpr int max_gathered_features = GRADSUM_MAX_GATHERED_FEATURES;

namespace detail {

/// Whether every row of an n x d View of type X is contiguous, by its type.
template <class X>
constexpr bool rows_always_contiguous =
    std::is_same<typename std::decay_t<X>::array_layout, Kokkos::LayoutRight>::value;

/// Whether the rows of `x` are contiguous (one apart within a row).
template <class X>
KOKKOS_INLINE_FUNCTION bool rows_contiguous(const X& x) {
  if constexpr (rows_always_contiguous<X>) return true;
  else return x.extent(1) <= 1 || x.stride(1) == 1;
}

/// Per-thread room for one row of X (a View, or a reference to one), and
/// the row as a model reads it. Holds one value where X's rows are always
/// contiguous.
template <class X>
struct FeatureRoom {
  using Scalar = typename std::decay_t<X>::non_const_value_type;
  static constexpr int capacity = rows_always_contiguous<X> ? 1 : max_gathered_features;
  Scalar values[capacity];
  /// How many rows ahead a column-major row's lines are asked for.
  static constexpr std::int64_t ahead = 32;

  /// Row r of x: a pointer into x where the row is contiguous, else its d
  /// values copied into this room (d <= capacity: checked on the host by
  /// gather_limit, a true invariant here).
  KOKKOS_FORCEINLINE_FUNCTION const Scalar* row(const std::decay_t<X>& x, std::int64_t r) {
    if (rows_contiguous(x)) return &x(r, 0);
    const int d = int(x.extent(1));
    if (d > capacity)
      Kokkos::abort("gradsum: a row to gather is wider than GRADSUM_MAX_GATHERED_FEATURES");
    // One cache line of each column holds the next rows too: asked for
    // `ahead` rows early, once per line (more columns than prefetch streams).
    if (x.stride(0) == 1 && r % 8 == 0)
      for (int j = 0; j < d; ++j) prefetch_lines<3>(x.data() + r + ahead + j * x.stride(1), 1);
    for (int j = 0; j < d; ++j) values[j] = x(r, j);
    return values;
  }
};

/// Why `who`'s per-sample kernels cannot read the features `x`, or "":
/// rows that are not contiguous and wider than max_gathered_features. An
/// empty `who` leaves out the "who: " prefix.
template <class X>
std::string gather_limit(const char* who, const X& x) {
  if (rows_contiguous(x) || std::int64_t(x.extent(1)) <= max_gathered_features) return {};
  return concat(who, *who ? ": " : "", "the features' rows are not contiguous (LayoutLeft or strided) and have ",
                x.extent(1), " values; a per-sample kernel gathers at most ",
                max_gathered_features,
                " (GRADSUM_MAX_GATHERED_FEATURES): define it larger before including gradsum, "
                "take the layer-wise path, or copy the features with Dataset::copy_from");
}

}  // namespace detail
}  // namespace gradsum
