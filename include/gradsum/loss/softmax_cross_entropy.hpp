// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/loss/detail/vector_math.hpp>

namespace gradsum {

/// Softmax cross-entropy on C logits z with an integer class y in [0, C):
///
///     l(z, y) = log sum_c e^{z_c} - z_y,     dl/dz_c = softmax(z)_c - [c = y],
///
/// the negative log-likelihood of multinomial logistic regression (Bishop,
/// Pattern Recognition and Machine Learning, sec. 4.3.4). The log-sum-exp
/// subtracts max_c z_c first, so no exponential overflows.
struct SoftmaxCrossEntropy {
  /// Short name used in messages and command lines.
  static const char* name() { return "softmax_cross_entropy"; }

  /// At least two classes.
  static bool supports_outputs(int num_outputs) { return num_outputs >= 2; }

  /// y must be an integer class index in [0, C).
  template <class Scalar>
  KOKKOS_FUNCTION static bool is_valid_target(Scalar y, int num_outputs) {
    return y >= Scalar(0) && y < Scalar(num_outputs) &&
           Scalar(static_cast<int>(y)) == y;
  }

  template <class Scalar>
  KOKKOS_FUNCTION static Scalar max_logit(const Scalar* z, int num_outputs) {
    Scalar m = z[0];
    for (int c = 1; c < num_outputs; ++c) m = z[c] > m ? z[c] : m;
    return m;
  }

  /// log sum_c e^{z_c} - z_y.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar value(const Scalar* z, int num_outputs,
                                      Scalar y) {
    const Scalar m = max_logit(z, num_outputs);
    Scalar s = 0;
    for (int c = 0; c < num_outputs; ++c) s += math::exp(z[c] - m);
    return m + math::log(s) - z[static_cast<int>(y)];
  }

  /// Writes softmax(z) - onehot(y) into `dz[0..C)`.
  template <class Scalar>
  KOKKOS_FUNCTION static void derivative(const Scalar* z, int num_outputs,
                                         Scalar y, Scalar* dz) {
    const Scalar m = max_logit(z, num_outputs);
    Scalar s = 0;
    for (int c = 0; c < num_outputs; ++c) {
      dz[c] = math::exp(z[c] - m);
      s += dz[c];
    }
    const Scalar inv = Scalar(1) / s;
    for (int c = 0; c < num_outputs; ++c) dz[c] *= inv;
    dz[static_cast<int>(y)] -= Scalar(1);
  }

  /// value() and derivative() at once, sharing the exponentials: the same
  /// operations in the same order, so the same bits as the two calls.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar value_and_derivative(const Scalar* z, int num_outputs, Scalar y,
                                                     Scalar* dz) {
    const Scalar m = max_logit(z, num_outputs);
    Scalar s = 0;
    for (int c = 0; c < num_outputs; ++c) {
      dz[c] = math::exp(z[c] - m);
      s += dz[c];
    }
    return loss_and_residual(z, num_outputs, y, m, s, dz);
  }

  /// value_and_derivative() with gradsum's branch-free exponential
  /// (loss/detail/vector_math.hpp, within 1.2 ulp of libm's), its
  /// multiply-adds fused where the target has FMA, so that the loop over
  /// the logits vectorizes on host spaces: for the layer-wise path, which
  /// serves the Sum reduction and promises no bits across builds. The sum
  /// of the exponentials is taken in the same order as value_and_derivative().
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar fused_value_and_derivative(const Scalar* z, int num_outputs,
                                                           Scalar y, Scalar* dz) {
    namespace vm = detail::vector_math;
    const Scalar m = max_logit(z, num_outputs);
    // Three loops: without -ffast-math a running sum in the first would
    // keep it from being vectorized.
    for (int c = 0; c < num_outputs; ++c) dz[c] = vm::exp<true>(z[c] - m);
    Scalar s = 0;
    for (int c = 0; c < num_outputs; ++c) s += dz[c];
    return loss_and_residual(z, num_outputs, y, m, s, dz);
  }

  /// The end of both forms, once dz holds e^{z_c - m} and s their sum:
  /// dz becomes softmax(z) - onehot(y); returns m + log s - z_y.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar loss_and_residual(const Scalar* z, int num_outputs, Scalar y,
                                                  Scalar m, Scalar s, Scalar* dz) {
    const int label = static_cast<int>(y);
    const Scalar value = m + math::log(s) - z[label];
    const Scalar inv = Scalar(1) / s;
    for (int c = 0; c < num_outputs; ++c) dz[c] *= inv;
    dz[label] -= Scalar(1);
    return value;
  }

  /// Writes the C x C matrix d^2 l / dz^2 = diag(p) - p p^T, p = softmax(z),
  /// row-major into `d2` .
  template <class Scalar>
  KOKKOS_FUNCTION static void second_derivative(const Scalar* z, int num_outputs,
                                                Scalar /*y*/, Scalar* d2) {
    const int k = num_outputs;
    const Scalar m = max_logit(z, k);
    Scalar s = 0;
    Scalar p[max_outputs];
    for (int c = 0; c < k; ++c) {
      p[c] = math::exp(z[c] - m);
      s += p[c];
    }
    for (int c = 0; c < k; ++c) p[c] /= s;
    for (int c = 0; c < k; ++c)
      for (int e = 0; e < k; ++e) d2[c * k + e] = (c == e ? p[c] : Scalar(0)) - p[c] * p[e];
  }

  /// Writes the class probabilities p = softmax(z) into `p[0..C)`, the
  /// largest logit subtracted first so that no exponential overflows.
  template <class Scalar>
  KOKKOS_FUNCTION static void probabilities(const Scalar* z, int num_outputs, Scalar* p) {
    const Scalar m = max_logit(z, num_outputs);
    Scalar s = 0;
    for (int c = 0; c < num_outputs; ++c) {
      p[c] = math::exp(z[c] - m);
      s += p[c];
    }
    for (int c = 0; c < num_outputs; ++c) p[c] /= s;
  }
  /// The predicted class: the index of the largest logit (first on ties).
  template <class Scalar>
  KOKKOS_FUNCTION static int predict_class(const Scalar* z, int num_outputs) {
    int best = 0;
    for (int c = 1; c < num_outputs; ++c)
      if (z[c] > z[best]) best = c;
    return best;
  }
};

}  // namespace gradsum
