// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/array_reduce.hpp>

#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// Kokkos array reduction: every sample adds `width` values into a
/// per-thread accumulator; accumulators are joined by component-wise sums.
template <class Scalar, class Body>
struct ArraySumFunctor {
  using value_type = Scalar[];
  using size_type = int;  // Kokkos reads value_count through this type

  int value_count;
  Body body;

  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    body(i, acc);
  }
  KOKKOS_FUNCTION void init(Scalar* acc) const {
    for (int j = 0; j < value_count; ++j) acc[j] = Scalar(0);
  }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    for (int j = 0; j < value_count; ++j) dst[j] += src[j];
  }
};

}  // namespace detail

/// In-process reduction by plain floating-point summation: a Kokkos
/// parallel_reduce in which every thread sums its samples in order and the
/// per-thread sums are added pairwise. Exact up to rounding; the rounding,
/// and so the last bits, depends on the thread count and backend.
struct Sum {
  /// Short name used in messages and command lines.
  static const char* name() { return "sum"; }
  /// Dense models' gradients may be summed by matrix products instead
  /// (the layer-wise path): their rounding is that of a plain sum too.
  static constexpr bool plain = true;

  /// Sums body(i, acc) over i in [0, n) into out(0 … width).
  ///
  /// `body(i, acc)` adds sample i's `width` contributions into the
  /// accumulator `acc`. `out` is a rank-1 View in a memory space the
  /// execution space can access, with at least `width` entries; it is
  /// overwritten. Asynchronous with respect to the host when `out` is not
  /// host memory; fence `space` before reading it from the host. On a GPU,
  /// an accumulator wider than detail::device_accumulator_bytes is summed
  /// in chunks (detail::array_reduce), which blocks and grows a workspace
  /// kept between calls when it is too small for them.
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label,
              std::int64_t n, int width, const Body& body,
              const OutView& out) const {
    using Scalar = typename OutView::non_const_value_type;
    Kokkos::View<Scalar*, typename OutView::memory_space,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        result(out.data(), width);
    detail::array_reduce(space, label, n, detail::ArraySumFunctor<Scalar, Body>{width, body},
                         result);
  }
};

}  // namespace gradsum
