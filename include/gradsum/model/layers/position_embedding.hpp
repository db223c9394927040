// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The learned position embedding (GPT-2's wpe): each row gets the vector
/// of its position within its window added, out(r) = in(r) + wpe[r mod T]
/// for windows of T tokens. dL/dwpe[p] sums dout over the windows' rows at
/// position p, the windows in order.

#include <gradsum/core/detail/entries.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/detail/table.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// g[p][j] += sum over windows s of dout(s T + p, j), the windows in
/// order: a position per index on host spaces (the columns vectorize), a
/// (position, column) pair per index elsewhere. Asynchronous.
template <class Space, class In, class Scalar>
void position_embedding_parameters(const Space& space, Tokens t, std::int64_t n, const In& dout,
                                   Scalar* g) {
  const char* label = "gradsum::layer::position_embedding::parameters";
  const std::int64_t length = t.length, sequences = t.sequences;
  if constexpr (runs_on_host<Space>) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, length),
        KOKKOS_LAMBDA(std::int64_t p) {
          Scalar* row = g + p * n;
          for (std::int64_t s = 0; s < sequences; ++s) {
            const Scalar* d = &dout(s * length + p, 0);
            for (std::int64_t j = 0; j < n; ++j) row[j] += d[j];
          }
        });
  } else {
    for_each_entry(
        space, label, length, n, KOKKOS_LAMBDA(std::int64_t p, std::int64_t j) {
          for (std::int64_t s = 0; s < sequences; ++s) g[p * n + j] += dout(s * length + p, j);
        });
  }
}

}  // namespace detail

/// A learned vector of `width` values for each of `context` positions
/// (parameters: the weight [context, width], row-major), added to the
/// rows of windows of at most `context` tokens. No workspace; nothing
/// fused beyond the add. A panel of longer windows is a gradsum::Error.
struct PositionEmbedding {
  /// Positions, T at most.
  int context = 0;
  /// Values per row, C.
  int width = 0;

  /// Throws gradsum::Error for a context or width below 1, or a table too
  /// large to index with an int.
  void validate() const {
    detail::validate_table("gradsum::PositionEmbedding", "context", context, width);
  }
  /// Throws gradsum::Error unless the windows of `t` fit the context.
  void validate(Tokens t) const {
    validate();
    if (t.length < 1 || t.length > context)
      fail("gradsum::PositionEmbedding: windows of ", t.length,
           " tokens do not fit its context of ", context, " positions (expected 1 to ", context,
           ")");
  }
  /// context x width.
  int num_parameters() const { return context * width; }
  int input_width() const { return width; }
  int output_width() const { return width; }
  std::size_t workspace_size(Tokens) const { return 0; }
  /// "position_embedding(T,C)".
  std::string describe() const { return concat("position_embedding(", context, ",", width, ")"); }

  /// out(r) = in(r) + wpe[r mod t.length]. Asynchronous; throws
  /// gradsum::Error for windows longer than the context.
  template <class Space, class Scalar>
  void forward(const Space& space, const Scalar* theta, Tokens t,
               LayerInput<Scalar, typename Space::memory_space> in,
               LayerOutput<Scalar, typename Space::memory_space> out, Scalar* /*work*/) const {
    validate(t);
    const std::int64_t n = width, length = t.length;
    detail::for_each_entry(
        space, "gradsum::layer::position_embedding::forward", t.rows(), n,
        KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
          out(r, j) = in(r, j) + theta[(r % length) * n + j];
        });
  }

  /// g += the sums of dout per position; din (unless null) = dout.
  /// Asynchronous; throws gradsum::Error for windows longer than the
  /// context.
  template <class Space, class Scalar>
  void backward(const Space& space, const Scalar* /*theta*/, Tokens t,
                LayerInput<Scalar, typename Space::memory_space> /*in*/,
                LayerInput<Scalar, typename Space::memory_space> /*out*/,
                LayerInput<Scalar, typename Space::memory_space> dout, Scalar* g,
                LayerOutput<Scalar, typename Space::memory_space> din, Scalar* /*work*/) const {
    validate(t);
    detail::position_embedding_parameters(space, t, width, dout, g);
    if (din.data() != nullptr)
      detail::for_each_entry(
          space, "gradsum::layer::position_embedding::input_gradient", t.rows(), width,
          KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) { din(r, j) = dout(r, j); });
  }
};

}  // namespace gradsum
