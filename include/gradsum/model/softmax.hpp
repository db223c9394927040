// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/multiply_add.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/detail/dense_layers.hpp>
#include <gradsum/model/detail/linear_block.hpp>
#include <gradsum/model/detail/row_dot.hpp>

namespace gradsum {

/// Multinomial linear model with C outputs: z_c = w_c . x + b_c.
///
/// With SoftmaxCrossEntropy it is softmax (multinomial logistic)
/// regression. Parameters are laid out output by output:
/// [w_0, b_0, w_1, b_1, …], each w_c of length d; biases are not
/// regularised.
///
/// The Analytic gradient with the Sum reduction takes the layer-wise path
/// (`layerwise`, the default): the batch's logits and gradient in two
/// matrix products (gradient/detail/layerwise.hpp). On host spaces, a
/// model of at most block_classes classes takes its batched per-sample
/// path instead (`batched`, the default): products that thin are slower
/// than blocks of samples (docs/performance.md). gradient/path.hpp says
/// which path a step takes.
class Softmax {
 public:
  /// A model for `num_features` >= 1 inputs and `num_classes` >= 2 outputs.
  Softmax(int num_features, int num_classes) : d_(num_features), c_(num_classes) {
    if (num_features < 1)
      fail("gradsum::Softmax: num_features must be at least 1, got ",
                   num_features);
    if (num_classes < 2)
      fail("gradsum::Softmax: num_classes must be at least 2, got ",
                   num_classes);
    const long long parameters = (static_cast<long long>(num_features) + 1) * num_classes;
    if (parameters > 2147483647)
      fail("gradsum::Softmax: ", num_classes, " classes x (", num_features,
                   " features + 1) = ", parameters, " parameters do not fit an int");
  }

  /// Short name used in messages.
  static const char* name() { return "softmax"; }

  /// Whether the gradient takes the layer-wise path where it can.
  bool layerwise = true;
  /// Samples per block on the batched per-sample path (host spaces).
  static constexpr int block_size = 8;
  /// Whether the per-sample path on host spaces takes blocks of samples
  /// (block_gradient) rather than one sample at a time.
  bool batched = true;
  /// On host spaces, models of at most this many classes take the batched
  /// path (while `batched`) even where the layer-wise path is open to them.
  static constexpr int block_classes = 16;

  /// Its one layer for the layer-wise path: C rows of (w_c, b_c).
  detail::DenseLayers<1> dense_layers() const {
    detail::DenseLayers<1> d;
    d.count = 1;
    d.layer[0].inputs = d_;
    d.layer[0].outputs = c_;
    d.layer[0].weights = 0;
    d.layer[0].form = detail::DenseForm::rows_with_bias;
    return d;
  }
  /// Input width d.
  KOKKOS_FUNCTION int num_features() const { return d_; }
  /// C outputs, one per class.
  KOKKOS_FUNCTION int num_outputs() const { return c_; }
  /// C (d + 1) parameters.
  KOKKOS_FUNCTION int num_parameters() const { return c_ * (d_ + 1); }
  /// Weights take the L2 penalty, biases do not.
  KOKKOS_FUNCTION bool is_regularized(int j) const { return j % (d_ + 1) != d_; }

  /// z_c = w_c . x + b_c for c in [0, C).
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x,
                               Scalar* z) const {
    for (int c = 0; c < c_; ++c) z[c] = detail::linear_logit(theta + c * (d_ + 1), x, d_);
  }

  /// g_c += dz_c * (x, 1) for every output c.
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* /*theta*/, const Scalar* x,
                                const Scalar* dz, Scalar* g) const {
    for (int c = 0; c < c_; ++c) detail::add_linear_gradient(dz[c], x, d_, g + c * (d_ + 1));
  }

  /// The batched per-sample path: the gradient of m <= block_size samples
  /// xs[s], ys[s] added into g, their summed loss returned. Each piece of
  /// a class's weights is read once for the block's logits, and each
  /// class's row of g is read and written once per block. Sum's path
  /// (Reproducible takes forward and backward): its multiply-adds are
  /// fused where the target has them.
  template <class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar block_gradient(const Loss& loss, const Scalar* theta,
                                        const Scalar* const* xs, const Scalar* ys, int m,
                                        Scalar* g) const {
    constexpr int B = block_size;
    Scalar dz[B][detail::output_capacity<Softmax>::value];
    const Scalar* x[B];
    Scalar total = 0;
    for (int s = 0; s < B; ++s) x[s] = xs[s < m ? s : 0];
    Scalar z[B][detail::output_capacity<Softmax>::value];
    for (int c = 0; c < c_; ++c) {
      const Scalar* w = theta + c * (d_ + 1);
      Scalar dots[B];
      detail::block_dots<B, true>(w, x, d_, dots);
      for (int s = 0; s < B; ++s) z[s][c] = w[d_] + dots[s];
    }
    for (int s = 0; s < B; ++s) {
      if (s < m) {
        total += detail::value_and_derivative(loss, z[s], c_, ys[s], dz[s]);
      } else {
        for (int c = 0; c < c_; ++c) dz[s][c] = 0;
      }
    }
    for (int c = 0; c < c_; ++c) {
      Scalar r[B];
      Scalar bias = 0;
      for (int s = 0; s < B; ++s) bias += (r[s] = dz[s][c]);
      Scalar* gc = g + c * (d_ + 1);
      for (int j = 0; j < d_; ++j) {
        Scalar sum = gc[j];
        for (int s = 0; s < B; ++s) sum = detail::multiply_add<true>(r[s], x[s][j], sum);
        gc[j] = sum;
      }
      gc[d_] += bias;
    }
    return total;
  }

  /// H += J^T D J with D = d^2 l / dz^2 (C x C, row-major in `d2`) and
  /// J = dz/dtheta: block (c, e) of H gains D_ce (x, 1)(x, 1)^T.
  template <class Scalar>
  KOKKOS_FUNCTION void hessian(const Scalar* /*theta*/, const Scalar* x,
                               const Scalar* d2, Scalar* H) const {
    const int w = d_ + 1, P = c_ * w;
    for (int c = 0; c < c_; ++c)
      for (int e = 0; e < c_; ++e) {
        const Scalar D = d2[c * c_ + e];
        for (int j = 0; j < w; ++j) {
          const Scalar xj = D * (j < d_ ? x[j] : Scalar(1));
          Scalar* row = H + (c * w + j) * P + e * w;
          for (int l = 0; l < d_; ++l) row[l] += xj * x[l];
          row[d_] += xj;
        }
      }
  }

 private:
  int d_;
  int c_;
};

}  // namespace gradsum
