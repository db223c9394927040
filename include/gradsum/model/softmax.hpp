// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/detail/dense_layers.hpp>

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
/// matrix products (gradient/detail/layerwise.hpp); other reductions, and
/// `layerwise` false, take the per-sample path.
class Softmax {
 public:
  /// A model for `num_features` >= 1 inputs and `num_classes` >= 2 outputs.
  Softmax(int num_features, int num_classes) : d_(num_features), c_(num_classes) {
    if (num_features < 1)
      detail::fail("gradsum::Softmax: num_features must be at least 1, got ",
                   num_features);
    if (num_classes < 2)
      detail::fail("gradsum::Softmax: num_classes must be at least 2, got ",
                   num_classes);
    const long long parameters = (static_cast<long long>(num_features) + 1) * num_classes;
    if (parameters > 2147483647)
      detail::fail("gradsum::Softmax: ", num_classes, " classes x (", num_features,
                   " features + 1) = ", parameters, " parameters do not fit an int");
  }

  /// Short name used in messages.
  static const char* name() { return "softmax"; }

  /// Whether the gradient takes the layer-wise path where it can.
  bool layerwise = true;

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
    for (int c = 0; c < c_; ++c) {
      const Scalar* w = theta + c * (d_ + 1);
      Scalar s = w[d_];
      for (int j = 0; j < d_; ++j) s += w[j] * x[j];
      z[c] = s;
    }
  }

  /// g_c += dz_c * (x, 1) for every output c.
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* /*theta*/, const Scalar* x,
                                const Scalar* dz, Scalar* g) const {
    for (int c = 0; c < c_; ++c) {
      Scalar* gc = g + c * (d_ + 1);
      const Scalar r = dz[c];
      for (int j = 0; j < d_; ++j) gc[j] += r * x[j];
      gc[d_] += r;
    }
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
