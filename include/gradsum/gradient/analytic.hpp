// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/prefetch.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>
#include <gradsum/gradient/detail/network.hpp>
#include <gradsum/gradient/path.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/reduction/detail/rank_one_block.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// What every per-sample kernel body reads: the model and loss, the
/// parameters, the data, and which rows are selected.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct PerSample {
  Model model;
  Loss loss;
  const Scalar* theta;
  X x;
  Y y;
  Rows rows;

  /// Whether the selected rows come from an index (a RowList: a shuffled
  /// mini-batch), in an order the hardware prefetchers cannot follow. A
  /// RowRange is read in order, which they follow.
  static constexpr bool indexed = !std::is_same<Rows, RowRange>::value;

  /// Bytes of one row.
  KOKKOS_FUNCTION std::size_t row_bytes() const { return x.extent(1) * sizeof(Scalar); }

  /// Whether the `count` selected samples from `first` on are consecutive
  /// rows of the data: always for a RowRange; for an index, its first and
  /// last rows tell (a full batch drawn by MiniBatchSampler is an index in
  /// stored order).
  KOKKOS_FUNCTION bool consecutive(std::int64_t first, std::int64_t count) const {
    if constexpr (indexed)
      return rows(first + count - 1) - rows(first) == count - 1;
    else
      return true;
  }

  /// Whether a model's batched path that asks for a whole block at once
  /// (BlockBody, for models without `ahead`) asks for the `count`
  /// selected samples from `first` on: rows of at most 128 bytes, and
  /// longer rows that are not consecutive (longer rows in order were
  /// slower asked for).
  KOKKOS_FUNCTION bool prefetches_block(std::int64_t first, std::int64_t count) const {
    return row_bytes() <= 128 || !consecutive(first, count);
  }

  /// Asks for selected sample i's target and the first
  /// prefetched_row_bytes of its row to be in the level-1 cache by the
  /// time they are read (the rest of a longer row the hardware prefetchers
  /// follow); i must be a selected sample. Nothing in device code. Forced
  /// inline: GCC takes a function that only prefetches for one without
  /// effects, and drops the call.
  KOKKOS_FORCEINLINE_FUNCTION void prefetch_sample(std::int64_t i) const {
#ifdef GRADSUM_SIMD_PREFETCH
    const std::int64_t r = rows(i);
    prefetch_lines<3>(&x(r, 0), prefetched_bytes());
    prefetch_lines<3>(&y(r), sizeof(Scalar));
#else
    (void)i;
#endif
  }
  /// How much of a row a prefetch asks for.
  KOKKOS_FUNCTION std::size_t prefetched_bytes() const {
    return row_bytes() < prefetched_row_bytes ? row_bytes() : prefetched_row_bytes;
  }
  /// Past this, the rest of a row is left to the hardware prefetchers
  /// (whole long rows asked for were slower).
  static constexpr std::size_t prefetched_row_bytes = 1024;
  /// How many samples ahead the per-sample path prefetches: enough for
  /// shuffled rows to reach the speed of rows read in order.
  static constexpr std::int64_t lookahead = 8;
};

/// One sample's contribution: forward, loss and its derivative, backward;
/// a single pass over the sample's features (they stay in cache between
/// forward and backward).
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct AnalyticBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  int num_parameters;

  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const auto& model = this->model;
    const auto& loss = this->loss;
    const Scalar* theta = this->theta;
    if constexpr (PerSample<Model, Loss, Scalar, X, Y, Rows>::indexed)
      if (i + this->lookahead < this->rows.size()) this->prefetch_sample(i + this->lookahead);
    const std::int64_t r = this->rows(i);
    FeatureRoom<X> room;
    const Scalar* xi = room.row(this->x, r);
    const Scalar yi = this->y(r);
    if constexpr (has_sample_gradient<Model, Loss, Scalar>::value) {
      acc[num_parameters] += model.sample_gradient(loss, theta, xi, yi, acc);
    } else {
      const int k = model.num_outputs();
      constexpr int capacity = output_capacity<Model>::value;
      Scalar z[capacity] = {};
      Scalar dz[capacity] = {};
      model.forward(theta, xi, z);
      acc[num_parameters] += value_and_derivative(loss, z, k, yi, dz);
      model.backward(theta, xi, dz, acc);
    }
  }
};

/// What BlockBody hands a model's batched path to call once per sample s
/// of its block, ahead(s): asks for the first `bytes` of row s of a later
/// block, for s < count (count 0 asks for nothing). The rows are row[s],
/// or, where `row` is null, first + s * stride (rows in stored order).
template <class Scalar>
struct AheadRows {
  const Scalar* const* row = nullptr;
  const Scalar* first = nullptr;
  std::int64_t stride = 0;
  int count = 0;
  std::size_t bytes = 0;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(int s) const {
    if (s < count) prefetch_lines<3>(row ? row[s] : first + s * stride, bytes);
  }
};

/// A block of Model::block_size selected samples through the model's
/// batched path; block b covers selected samples [b B, min(n, (b + 1) B)).
///
/// It also asks for rows that the same thread most likely reads later
/// (a static schedule gives each thread consecutive blocks). A model that
/// takes an `ahead` (Linear) asks for them a row per sample as it goes,
/// chosen by ahead_of(); for other models, the next block's rows are asked
/// for at the start (prefetches_block()). Asked for all at once, a block's
/// rows wait for the core's few line-fill buffers (docs/performance.md).
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct BlockBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  using Common = PerSample<Model, Loss, Scalar, X, Y, Rows>;
  int num_parameters;
  std::int64_t num_rows;

  static constexpr int B = Model::block_size;
  static constexpr bool spreads =
      block_gradient_takes_ahead<Model, Loss, Scalar, AheadRows<Scalar>>::value;
  /// In-order rows up to this long are asked for two blocks ahead; longer
  /// ones are left to the hardware prefetchers, which follow them better.
  static constexpr std::size_t longest_in_order_row = 512;

  /// Selected samples in the block that starts at `first` (0 past the end).
  KOKKOS_FUNCTION std::int64_t block_count(std::int64_t first) const {
    const std::int64_t left = num_rows - first;
    return left < 0 ? 0 : left < B ? left : B;
  }

  /// The rows to ask for while the block before `next` (the first
  /// selected sample of the next block) is worked on: the next block's if
  /// an index scatters them (their targets asked for now, into `row`), else
  /// the block after it's, if in order and at most longest_in_order_row
  /// bytes long.
  KOKKOS_FUNCTION AheadRows<Scalar> ahead_of(std::int64_t next, const Scalar** row) const {
    AheadRows<Scalar> ahead;
    ahead.bytes = this->prefetched_bytes();
    const std::int64_t next_count = block_count(next);
    if (next_count == 0) return ahead;
    if (!this->consecutive(next, next_count)) {
      for (int s = 0; s < next_count; ++s) {
        const std::int64_t r = this->rows(next + s);
        row[s] = &this->x(r, 0);
        prefetch_lines<3>(&this->y(r), sizeof(Scalar));
      }
      ahead.row = row;
      ahead.count = int(next_count);
      return ahead;
    }
    const std::int64_t later = next + B;
    const std::int64_t later_count = block_count(later);
    if (later_count == 0 || this->row_bytes() > longest_in_order_row ||
        !this->consecutive(later, later_count))
      return ahead;
    ahead.first = &this->x(this->rows(later), 0);
    ahead.stride = std::int64_t(this->x.stride_0());
    ahead.count = int(later_count);
    return ahead;
  }

  KOKKOS_FUNCTION void operator()(std::int64_t b, Scalar* acc) const {
    const std::int64_t first = b * B;
    const int m = int(block_count(first));
    const Scalar* xs[B] = {};  // (GCC 12 at -O2 thinks rows m … B-1 are read)
    Scalar ys[B] = {};
    for (int s = 0; s < m; ++s) {
      const std::int64_t r = this->rows(first + s);
      xs[s] = &this->x(r, 0);
      ys[s] = this->y(r);
    }
    const std::int64_t next = first + B;
    if constexpr (spreads) {
      const Scalar* row[B] = {};
      acc[num_parameters] += this->model.block_gradient(this->loss, this->theta, xs, ys, m, acc,
                                                        ahead_of(next, row));
    } else {
      const std::int64_t next_count = block_count(next);
      if (next_count > 0 && this->prefetches_block(next, next_count))
        for (std::int64_t i = next; i < next + next_count; ++i) this->prefetch_sample(i);
      acc[num_parameters] += this->model.block_gradient(this->loss, this->theta, xs, ys, m, acc);
    }
  }
};

/// A block of Model::block_size selected samples through the model's
/// block_residuals, in the rank-one form of binned reductions: sample s
/// contributes dz_s (x_s, 1) and its loss.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct RankOneBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  using block_type = RankOneBlock<Scalar, Model::block_size>;
  std::int64_t num_rows;

  KOKKOS_FUNCTION void operator()(std::int64_t b, block_type& block) const {
    constexpr int B = Model::block_size;
    const std::int64_t first = b * B;
    const int m = num_rows - first < B ? int(num_rows - first) : B;
    Scalar ys[B] = {};
    for (int s = 0; s < m; ++s) {
      const std::int64_t r = this->rows(first + s);
      block.row[s] = &this->x(r, 0);
      ys[s] = this->y(r);
    }
    block.m = m;
    // The rows of block b + 1, which the same thread most likely takes next.
    for (int s = 0; s < m && first + B + s < num_rows; ++s)
      block.next[s] = &this->x(this->rows(first + B + s), 0);
    this->model.block_residuals(this->loss, this->theta, block.row, ys, m, block.scale,
                                block.value);
  }
};

}  // namespace detail

/// The exact gradient from the model's backward pass (backpropagation).
///
/// For each selected sample: z = forward(theta, x), dz = dl/dz(z, y),
/// g += dz . dz/dtheta. Cost: one pass over the selected rows, on the path
/// gradient_path() names (gradient/path.hpp): the layer-wise path runs the
/// whole batch through each layer in matrix products
/// (gradient/detail/layerwise.hpp), in the room of the workspace beyond
/// workspace_size(P) that a step adds for it (layerwise_workspace_size).
struct Analytic {
  /// Short name used in messages and command lines.
  static const char* name() { return "analytic"; }
  /// The model must provide backward() (core/requirements.hpp).
  static constexpr bool needs_backward = true;
  /// Analytic needs no workspace.
  static std::size_t workspace_size(int /*num_parameters*/) { return 0; }
  /// No run-time knobs to check.
  static void validate() {}

  /// Writes the summed gradient into out(0 … P) and the summed loss into
  /// out(P), over the selected rows. Asynchronous.
  template <class ExecutionSpace, class Model, class Loss, class Reduction,
            class Theta, class Data, class Rows, class Out, class Work>
  void sum(const ExecutionSpace& space, const Model& model, const Loss& loss,
           const Reduction& reduction, const Theta& theta, const Data& data,
           const Rows& rows, const Out& out, const Work& work) const {
    if constexpr (detail::is_network<Model>::value) {
      check_network_reduction(reduction);
      detail::network_sum(space, model, loss, theta, data, rows, out, work);
    } else {
      sum_model(space, model, loss, reduction, theta, data, rows, out, work);
    }
  }

  /// For a Network: the summed loss into out(P) and zeros into out(0 … P),
  /// the forward passes alone (Step::evaluate_loss). Asynchronous.
  template <class ExecutionSpace, class Model, class Loss, class Reduction,
            class Theta, class Data, class Rows, class Out, class Work>
  void sum_loss(const ExecutionSpace& space, const Model& model, const Loss& loss,
                const Reduction& reduction, const Theta& theta, const Data& data,
                const Rows& rows, const Out& out, const Work& work) const {
    static_assert(detail::is_network<Model>::value,
                  "gradsum::Analytic::sum_loss: the loss alone is a Network's path only");
    check_network_reduction(reduction);
    detail::network_sum(space, model, loss, theta, data, rows, out, work, false);
  }

 private:
  template <class Reduction>
  static void check_network_reduction(const Reduction& reduction) {
    if (!detail::sums_plainly(reduction))
      fail("gradsum::Analytic: a Network sums with a plain reduction (Sum) only; ",
           reduction.name(), " needs each sample's contribution, which a network of layers "
           "does not compute on its own");
  }

  template <class ExecutionSpace, class Model, class Loss, class Reduction,
            class Theta, class Data, class Rows, class Out, class Work>
  void sum_model(const ExecutionSpace& space, const Model& model, const Loss& loss,
                 const Reduction& reduction, const Theta& theta, const Data& data,
                 const Rows& rows, const Out& out, const Work& work) const {
    using Scalar = typename Data::scalar_type;
    using X = typename Data::features_view;
    using Y = typename Data::targets_view;
    using Open = detail::OpenPaths<ExecutionSpace, Scalar, Model, Loss, Reduction>;
    const GradientPath path = gradient_path<ExecutionSpace, Scalar>(model, loss, reduction);
    const int P = model.num_parameters();
    const std::int64_t n = rows.size();
    const detail::PerSample<Model, Loss, Scalar, X, Y, Rows> common{
        model, loss, theta.data(), data.features(), data.targets(), rows};
    // The block paths read rows in place; rows that are not contiguous are
    // gathered one sample at a time.
    constexpr bool contiguous_type =
        !std::is_same<typename X::array_layout, Kokkos::LayoutLeft>::value;
    const bool contiguous = detail::rows_contiguous(data.features());
    if constexpr (Open::layerwise) {
      if (path == GradientPath::layerwise) {
        detail::layerwise_sum(space, model, loss, theta, data, rows, out, work);
        return;
      }
    }
    if constexpr (Open::blocks && contiguous_type) {
      if (path == GradientPath::blocks && contiguous) {
        reduction.reduce(space, "gradsum::gradient::analytic_batched",
                         (n + Model::block_size - 1) / Model::block_size, P + 1,
                         detail::BlockBody<Model, Loss, Scalar, X, Y, Rows>{common, P, n}, out);
        return;
      }
    }
    if constexpr (Open::rank_one_blocks && contiguous_type) {
      if (path == GradientPath::rank_one_blocks && contiguous) {
        reduction.reduce(space, "gradsum::gradient::analytic_rank_one",
                         (n + Model::block_size - 1) / Model::block_size, P + 1,
                         detail::RankOneBody<Model, Loss, Scalar, X, Y, Rows>{common, n}, out);
        return;
      }
    }
    reduction.reduce(space, "gradsum::gradient::analytic", n, P + 1,
                     detail::AnalyticBody<Model, Loss, Scalar, X, Y, Rows>{common, P}, out);
  }
};

namespace detail {

/// Analytic, or a wrapper of it (`inner_gradient`) that passes the
/// reduction through when it does not combine robustly.
template <class G, class = void>
struct is_analytic_based : std::is_same<G, Analytic> {};
template <class G>
struct is_analytic_based<G, std::void_t<typename G::inner_gradient>>
    : is_analytic_based<typename G::inner_gradient> {};

}  // namespace detail
}  // namespace gradsum
