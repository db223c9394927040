// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The paths by which the Analytic gradient sums a batch, and the one
/// function that chooses among them, gradient_path(): Analytic::sum takes
/// the path it names, a Step sizes its workspace for it and reports it
/// (Step::gradient_path), and the programs print it.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/requirements.hpp>

namespace gradsum {

/// How the Analytic gradient sums the contributions of a batch; every path
/// gives the per-sample path's gradient (bit for bit where the reduction
/// promises bits).
enum class GradientPath {
  /// The whole batch through each dense layer in matrix products
  /// (gradient/detail/layerwise.hpp): MLP and Softmax with `layerwise`
  /// set and a plain reduction (Sum).
  layerwise,
  /// Blocks of samples through the model's block arithmetic
  /// (`block_gradient`) on host spaces, for reductions that take a
  /// block's partial sum: Linear, and Softmax of at most block_classes
  /// classes (or any number without the layer-wise path), `batched` set.
  blocks,
  /// Blocks of samples whose contributions dz (x, 1) a reduction that needs
  /// each sample's takes in rank-one form (`block_residuals`) on host
  /// spaces: Linear with Reproducible, `batched` set.
  rank_one_blocks,
  /// forward, the loss and backward one sample at a time: the reference,
  /// open to every model, reduction and space but a Network.
  per_sample,
  /// Panels of the batch through a Network's layers, the loss at every
  /// position (gradient/detail/network.hpp): a Network with a plain
  /// reduction (Sum), its only path.
  network
};

/// The words the programs print for `path`: "matrix path", "per-sample
/// path in blocks", "per-sample path in rank-one blocks", "per-sample path",
/// "network path".
inline const char* path_name(GradientPath path) {
  switch (path) {
    case GradientPath::layerwise: return "matrix path";
    case GradientPath::blocks: return "per-sample path in blocks";
    case GradientPath::rank_one_blocks: return "per-sample path in rank-one blocks";
    case GradientPath::network: return "network path";
    default: return "per-sample path";
  }
}

namespace detail {

/// Whether a reduction needs each sample's contribution on its own now
/// (Reproducible, RuntimeReduction while it bins): no block's partial sum.
template <class R>
bool needs_each_sample(const R& reduction) {
  if constexpr (is_binned_reduction<R>::value) return bins_in_use(reduction);
  else return false;
}

/// The paths open to a Model with a Loss and a Reduction on Space for
/// Scalar data, whatever the run-time switches: Analytic::sum compiles
/// only these.
template <class Space, class Scalar, class Model, class Loss, class Reduction>
struct OpenPaths {
  static constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  static constexpr bool batched = host && has_batched_switch<Model>::value;
  static constexpr bool layerwise =
      has_dense_layers<Model>::value &&
      (is_plain_reduction<Reduction>::value || has_plain_switch<Reduction>::value);
  static constexpr bool declares_blocks = batched && has_block_gradient<Model, Loss, Scalar>::value;
  static constexpr bool blocks =
      declares_blocks &&
      (!is_binned_reduction<Reduction>::value || has_bins_switch<Reduction>::value);
  static constexpr bool rank_one_blocks = declares_blocks &&
                                          has_block_residuals<Model, Loss, Scalar>::value &&
                                          takes_rank_one_blocks<Reduction>::value;
};

}  // namespace detail

/// The path Analytic::sum takes for `model` with `loss` and `reduction` on
/// `Space` for `Scalar` data: for a Network, the network path with a plain
/// reduction (else per_sample, which a step refuses for it); otherwise the
/// first open one of:
/// - layerwise: the model's `layerwise` set and the reduction plain, unless
///   on a host space its block path comes first (`batched` set and at most
///   `block_classes` outputs: Softmax of few classes);
/// - blocks: on a host space, `batched` set and the reduction taking
///   partial sums;
/// - rank_one_blocks: on a host space, `batched` set and the reduction
///   needing each sample's contribution in rank-one form;
/// - per_sample.
template <class Space, class Scalar, class Model, class Loss, class Reduction>
GradientPath gradient_path(const Model& model, const Loss& /*loss*/, const Reduction& reduction) {
  if constexpr (detail::is_network<Model>::value) {
    (void)model;
    return detail::sums_plainly(reduction) ? GradientPath::network : GradientPath::per_sample;
  }
  using Open = detail::OpenPaths<Space, Scalar, Model, Loss, Reduction>;
  bool blocks_first = false;
  if constexpr (Open::batched && detail::has_block_classes<Model>::value)
    blocks_first = model.batched && model.num_outputs() <= Model::block_classes;
  if constexpr (Open::layerwise)
    if (model.layerwise && detail::sums_plainly(reduction) && !blocks_first)
      return GradientPath::layerwise;
  if constexpr (Open::blocks)
    if (model.batched && !detail::needs_each_sample(reduction)) return GradientPath::blocks;
  if constexpr (Open::rank_one_blocks)
    if (model.batched && detail::needs_each_sample(reduction))
      return GradientPath::rank_one_blocks;
  return GradientPath::per_sample;
}

}  // namespace gradsum
