// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/prefetch.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/detail/linear_block.hpp>

#include <string>
#include <type_traits>

#ifndef GRADSUM_LINEAR_BLOCK
/// Samples per block on the linear model's batched path: independent SIMD
/// lanes hide the latency of the loss's exp and log1p; rows of 256 bytes or
/// more go half a block at a time, to stay in L1 for the update.
#define GRADSUM_LINEAR_BLOCK 32
#endif

namespace gradsum {

/// Linear model with one output: z = w . x + b.
///
/// With SquaredError it is linear regression, with BinaryCrossEntropy
/// logistic regression (z is the logit). Parameters are laid out as
/// [w_0 … w_{d-1}, b]; the bias is not regularised.
///
/// Two ways to the same gradient: per sample, and batched, for losses
/// with a block form (BinaryCrossEntropy, SquaredError): the logits of
/// GRADSUM_LINEAR_BLOCK samples, then their loss in one loop the compiler
/// vectorizes, then their gradients. The Analytic gradient takes the
/// batched path on host spaces when `batched` is true (the default). A
/// reduction that needs each sample's contribution on its own
/// (Reproducible) gets them from block_residuals: every sample's dl/dz and
/// loss, from the same block arithmetic. GPUs keep the per-sample path,
/// and so does a class derived from Linear (its own forward or backward
/// would be bypassed).
class Linear {
 public:
  /// Samples per block on the batched path.
  static constexpr int block_size = GRADSUM_LINEAR_BLOCK;

  /// A model for 1 <= `num_features` < 2^31 - 1 input features (the
  /// parameter count, with the bias, must fit an int).
  explicit Linear(int num_features) : d_(num_features) {
    if (num_features < 1 || num_features > 2147483646)
      fail("gradsum::Linear: num_features must be in [1, 2147483646] (the ",
                   "parameter count, with the bias, must fit an int), got ", num_features);
  }

  /// Whether the Analytic gradient may take the batched path (see above).
  bool batched = true;

  /// Per-sample output arrays need room for one value only.
  static constexpr int output_capacity = 1;

  /// Short name used in messages.
  static const char* name() { return "linear"; }
  /// Input width d.
  KOKKOS_FUNCTION int num_features() const { return d_; }
  /// One output.
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  /// d weights and one bias.
  KOKKOS_FUNCTION int num_parameters() const { return d_ + 1; }
  /// Everything but the bias takes the L2 penalty.
  KOKKOS_FUNCTION bool is_regularized(int j) const { return j < d_; }

  /// z[0] = w . x + b for one sample x[0..d).
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x,
                               Scalar* z) const {
    z[0] = detail::linear_logit(theta, x, d_);
  }

  /// g += dz[0] * (x, 1): the gradient of dz . z with respect to (w, b).
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* /*theta*/, const Scalar* x,
                                const Scalar* dz, Scalar* g) const {
    detail::add_linear_gradient(dz[0], x, d_, g);
  }

  /// Batched gradient over m <= block_size samples xs[s] with targets
  /// ys[s]: g += the sum of their gradients; returns the sum of their
  /// losses. Only for losses with a block form (the trait
  /// detail::has_block_value_and_derivative); sample by sample it is the
  /// arithmetic of forward, the loss, backward, except for the loss's own
  /// vectorizable exp and log1p and for fused multiply-adds where the
  /// target has them (Sum's path; it promises no bits across builds).
  ///
  /// `ahead(s)` is called for each sample s < m as its logit is computed:
  /// the caller may ask for a later block's rows there, a row at a time
  /// (detail::NoPrefetch, the default, asks for nothing).
  template <class Loss, class Scalar, class Ahead = detail::NoPrefetch,
            class = std::enable_if_t<
                detail::has_block_value_and_derivative<Loss, Scalar, block_size>::value>>
  KOKKOS_FUNCTION Scalar block_gradient(const Loss& loss, const Scalar* theta,
                                        const Scalar* const* xs, const Scalar* ys, int m,
                                        Scalar* g, const Ahead& ahead = Ahead{}) const {
    constexpr int B = block_size;
    constexpr int half = B / 2 > 0 ? B / 2 : 1;
    const detail::LinearBlock block{d_};
    if (!detail::long_rows<Scalar>(d_))
      return block.sub_block_gradient<B, false>(loss, theta, xs, ys, m, g, ahead, 0);
    Scalar total = 0;
    for (int s = 0; s < m; s += half)
      total += block.sub_block_gradient<half, true>(loss, theta, xs + s, ys + s,
                                                    m - s < half ? m - s : half, g, ahead, s);
    return total;
  }

  /// The batched path for reductions that need each sample's contribution
  /// on its own (Reproducible): for m <= block_size samples, dl/dz of
  /// sample s into dz[s] and its loss into value[s] (s < m; the rest is
  /// padding). Sample s's gradient is dz[s] (x_s, 1): what backward() adds.
  /// Every sample's results are those of forward() and the loss's block
  /// form, whatever its place in the block: no fused multiply-adds, so
  /// that they are the same bits on every target.
  template <class Loss, class Scalar,
            class = std::enable_if_t<
                detail::has_block_value_and_derivative<Loss, Scalar, block_size>::value>>
  KOKKOS_FUNCTION void block_residuals(const Loss& loss, const Scalar* theta,
                                       const Scalar* const* xs, const Scalar* ys, int m,
                                       Scalar* dz, Scalar* value) const {
    constexpr int B = block_size;
    Scalar z[B] = {}, y[B] = {};
    const detail::LinearBlock block{d_};
    if (detail::long_rows<Scalar>(d_))
      block.logits<true, false>(theta, xs, ys, m, z, y, detail::NoPrefetch{}, 0);
    else
      block.logits<false, false>(theta, xs, ys, m, z, y, detail::NoPrefetch{}, 0);
    loss.template block_values_and_derivatives<B>(z, y, value, dz);
  }

  /// H += d2[0] * (x, 1)(x, 1)^T: the Hessian of the loss through this
  /// sample, given d^2 l / dz^2 in `d2`; H is P x P, row-major.
  template <class Scalar>
  KOKKOS_FUNCTION void hessian(const Scalar* /*theta*/, const Scalar* x,
                               const Scalar* d2, Scalar* H) const {
    const int P = d_ + 1;
    for (int j = 0; j < P; ++j) {
      const Scalar xj = d2[0] * (j < d_ ? x[j] : Scalar(1));
      for (int l = 0; l < d_; ++l) H[j * P + l] += xj * x[l];
      H[j * P + d_] += xj;
    }
  }

 private:
  int d_;
};

}  // namespace gradsum
