// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The token embedding (PyTorch's nn.Embedding): a row holding a token id
/// v becomes row v of the weight [vocab, width]. Its backward adds each
/// row's dout into its token's row of the gradient, the rows in order.

#include <gradsum/core/detail/entries.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/detail/table.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace gradsum {
namespace detail {

/// Whether v is a whole number in [0, vocab) (NaN is not).
template <class Scalar>
KOKKOS_INLINE_FUNCTION bool valid_token_id(Scalar v, int vocab) {
  // In range first: the conversion is then defined (and NaN fails it).
  return v >= Scalar(0) && v < Scalar(vocab) && Scalar(std::int64_t(v)) == v;
}

/// The id of row r: ids(r), or ids(r, 0) for a rank-2 View.
template <class Ids>
KOKKOS_INLINE_FUNCTION typename Ids::non_const_value_type token_id(const Ids& ids, std::int64_t r) {
  if constexpr (Ids::rank == 1)
    return ids(r);
  else
    return ids(r, 0);
}

/// Ends the program: a kernel met a token id outside [0, vocab).
KOKKOS_INLINE_FUNCTION void abort_bad_token_id() {
  Kokkos::abort(
      "gradsum: TokenEmbedding: a token id outside [0, vocab) or not a whole number "
      "(check_token_ids finds its row)");
}

/// out(r) = row in(r, 0) of the vocab x n table theta: a row per index,
/// its id checked once, on host spaces; an entry per index elsewhere.
/// Asynchronous.
template <class Space, class Scalar, class In, class Out>
void token_embedding_rows(const Space& space, int vocab, std::int64_t n, const Scalar* theta,
                          const In& in, const Out& out) {
  const char* label = "gradsum::layer::token_embedding::forward";
  const std::int64_t rows = std::int64_t(out.extent(0));
  if constexpr (runs_on_host<Space>) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
        KOKKOS_LAMBDA(std::int64_t r) {
          const Scalar id = in(r, 0);
          if (!valid_token_id(id, vocab)) abort_bad_token_id();
          const Scalar* from = theta + std::int64_t(id) * n;
          Scalar* to = &out(r, 0);
          for (std::int64_t j = 0; j < n; ++j) to[j] = from[j];
        });
  } else {
    for_each_entry(
        space, label, rows, n, KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
          const Scalar id = in(r, 0);
          if (!valid_token_id(id, vocab)) abort_bad_token_id();
          out(r, j) = theta[std::int64_t(id) * n + j];
        });
  }
}

}  // namespace detail

/// The first row of `ids` (a rank-1 View, or rank 2 with the ids in column
/// 0, as a TokenEmbedding's input) whose id is not a whole number in
/// [0, vocab), or -1 when every id is valid: what a data set checks before
/// the embedding's kernels see its ids (they abort on a bad one).
/// Blocking.
template <class Space, class Ids>
std::int64_t check_token_ids(const Space& space, const Ids& ids, int vocab) {
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t first = none;
  Kokkos::parallel_reduce(
      "gradsum::layer::token_embedding::check_ids",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                  std::int64_t(ids.extent(0))),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t & lowest) {
        const bool valid = detail::valid_token_id(detail::token_id(ids, r), vocab);
        if (!valid && r < lowest) lowest = r;
      },
      Kokkos::Min<std::int64_t>(first));
  return first == none ? -1 : first;
}

/// A table of `vocab` learned vectors of `width` values (parameters: the
/// weight [vocab, width], row-major). Its input is rows x 1, each row a
/// token id held as a Scalar value; a kernel that meets an id that is not
/// a whole number in [0, vocab) aborts with a gradsum: message (a data set
/// checks its ids first with check_token_ids). No workspace. The backward
/// runs in parallel over columns, each adding the rows' dout in order, so
/// repeated ids sum without atomics; din, when asked for, is 0 (the output
/// does not vary smoothly with an id).
struct TokenEmbedding {
  /// Distinct tokens, V.
  int vocab = 0;
  /// Values per vector, C.
  int width = 0;

  /// Throws gradsum::Error for a vocabulary or width below 1, or a table
  /// too large to index with an int.
  void validate() const {
    detail::validate_table("gradsum::TokenEmbedding", "vocab", vocab, width);
  }
  /// vocab x width.
  int num_parameters() const { return vocab * width; }
  int input_width() const { return 1; }
  int output_width() const { return width; }
  std::size_t workspace_size(Tokens) const { return 0; }
  /// "token_embedding(V,C)".
  std::string describe() const { return concat("token_embedding(", vocab, ",", width, ")"); }

  /// out(r) = row in(r, 0) of the weight. Asynchronous.
  template <class Space, class Scalar>
  void forward(const Space& space, const Scalar* theta, Tokens /*t*/,
               LayerInput<Scalar, typename Space::memory_space> in,
               LayerOutput<Scalar, typename Space::memory_space> out, Scalar* /*work*/) const {
    validate();
    detail::token_embedding_rows(space, vocab, width, theta, in, out);
  }

  /// g's row in(r, 0) += dout(r) for every row r, in order; din (unless
  /// null) = 0. Asynchronous.
  template <class Space, class Scalar>
  void backward(const Space& space, const Scalar* /*theta*/, Tokens t,
                LayerInput<Scalar, typename Space::memory_space> in,
                LayerInput<Scalar, typename Space::memory_space> /*out*/,
                LayerInput<Scalar, typename Space::memory_space> dout, Scalar* g,
                LayerOutput<Scalar, typename Space::memory_space> din, Scalar* /*work*/) const {
    validate();
    const int v = vocab;
    const std::int64_t n = width, rows = t.rows();
    detail::for_each_column_block(
        space, "gradsum::layer::token_embedding::parameters", n,
        KOKKOS_LAMBDA(std::int64_t j0, std::int64_t j1) {
          for (std::int64_t r = 0; r < rows; ++r) {
            const Scalar id = in(r, 0);
            // Checked again: a bad id here would write outside g.
            if (!detail::valid_token_id(id, v)) detail::abort_bad_token_id();
            Scalar* row = g + std::int64_t(id) * n;
            for (std::int64_t j = j0; j < j1; ++j) row[j] += dout(r, j);
          }
        });
    if (din.data() != nullptr)
      detail::for_each_entry(
          space, "gradsum::layer::token_embedding::input_gradient", rows, 1,
          KOKKOS_LAMBDA(std::int64_t r, std::int64_t) { din(r, 0) = 0; });
  }
};

}  // namespace gradsum
