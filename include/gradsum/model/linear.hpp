// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <string>

namespace gradsum {

/// Linear model with one output: z = w . x + b.
///
/// With SquaredError it is linear regression, with BinaryCrossEntropy
/// logistic regression (z is the logit). Parameters are laid out as
/// [w_0 … w_{d-1}, b]; the bias is not regularised.
class Linear {
 public:
  /// A model for `num_features` >= 1 input features.
  explicit Linear(int num_features) : d_(num_features) {
    if (num_features < 1)
      detail::fail("gradsum::Linear: num_features must be at least 1, got ",
                   num_features);
  }

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
    // Four independent partial sums: the dot product is otherwise one
    // dependent chain of additions, slower than reading x from memory.
    Scalar s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int j = 0;
    for (; j + 4 <= d_; j += 4) {
      s0 += theta[j] * x[j];
      s1 += theta[j + 1] * x[j + 1];
      s2 += theta[j + 2] * x[j + 2];
      s3 += theta[j + 3] * x[j + 3];
    }
    for (; j < d_; ++j) s0 += theta[j] * x[j];
    z[0] = theta[d_] + ((s0 + s1) + (s2 + s3));
  }

  /// g += dz[0] * (x, 1): the gradient of dz . z with respect to (w, b).
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* /*theta*/, const Scalar* x,
                                const Scalar* dz, Scalar* g) const {
    const Scalar r = dz[0];
    for (int j = 0; j < d_; ++j) g[j] += r * x[j];
    g[d_] += r;
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
