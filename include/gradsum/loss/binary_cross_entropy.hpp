// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/loss/detail/vector_math.hpp>

namespace gradsum {

/// Binary cross-entropy on a logit z (logistic regression):
///
///     l(z, y) = log(1 + e^z) - y z,     dl/dz = sigmoid(z) - y,
///
/// the negative log-likelihood of a Bernoulli(sigmoid(z)) observation y in
/// [0, 1] (Bishop, Pattern Recognition and Machine Learning, sec. 4.3.2).
/// log(1 + e^z) - y z is evaluated as [(1 - y) z or -y z] + log1p(e^{-|z|}),
/// which neither overflows nor cancels for any finite z, and sigmoid
/// branches on the sign of z for the same reason. The derivative is
/// formed from q = sigmoid(-|z|) = e^{-|z|} / (1 + e^{-|z|}) so that a
/// confident correct prediction keeps its small derivative: for z >= 0,
/// sigmoid(z) - y = (1 - y) - q, which for y = 1 is -q itself, not the
/// difference of two numbers near 1 (at z = 30 in double that difference
/// would keep no correct digit).
struct BinaryCrossEntropy {
  /// Short name used in messages and command lines.
  static const char* name() { return "binary_cross_entropy"; }

  /// The model must produce one logit.
  static bool supports_outputs(int num_outputs) { return num_outputs == 1; }

  /// Targets are probabilities of class 1: any y in [0, 1].
  template <class Scalar>
  KOKKOS_FUNCTION static bool is_valid_target(Scalar y, int /*num_outputs*/) {
    return y >= Scalar(0) && y <= Scalar(1);
  }

  /// log(1 + e^z) - y z, stable for any finite z.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar value(const Scalar* z, int /*num_outputs*/,
                                      Scalar y) {
    const Scalar t = z[0];
    // max(z, 0) - y z written without subtracting two large terms, so a
    // confident correct prediction (z = 30, y = 1) keeps its tiny loss.
    const Scalar linear = t > Scalar(0) ? (Scalar(1) - y) * t : -y * t;
    return linear + math::log1p(math::exp(-math::fabs(t)));
  }

  /// sigmoid(z), without overflow for any finite z.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar sigmoid(Scalar t) {
    if (t >= Scalar(0)) return Scalar(1) / (Scalar(1) + math::exp(-t));
    const Scalar e = math::exp(t);
    return e / (Scalar(1) + e);
  }

  /// sigmoid(t) - y, given e = e^{-|t|}, without cancellation (above).
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar residual(Scalar t, Scalar e, Scalar y) {
    const Scalar q = e / (Scalar(1) + e);  // sigmoid(-|t|)
    return t >= Scalar(0) ? (Scalar(1) - y) - q : q - y;
  }

  /// Writes sigmoid(z) - y into `dz[0]`.
  template <class Scalar>
  KOKKOS_FUNCTION static void derivative(const Scalar* z, int /*num_outputs*/,
                                         Scalar y, Scalar* dz) {
    dz[0] = residual(z[0], math::exp(-math::fabs(z[0])), y);
  }

  /// The loss and, into `dz[0]`, its derivative, sharing one exponential
  /// (the step's hot path uses this when a loss offers it).
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar value_and_derivative(const Scalar* z, int /*num_outputs*/,
                                                     Scalar y, Scalar* dz) {
    const Scalar t = z[0];
    const Scalar e = math::exp(-math::fabs(t));  // in (0, 1]
    dz[0] = residual(t, e, y);
    const Scalar linear = t > Scalar(0) ? (Scalar(1) - y) * t : -y * t;
    return linear + math::log1p(e);
  }

  /// value_and_derivative for a block of B one-output samples: writes the
  /// loss of sample s into value[s] and dl/dz into dz[s], for every s < B.
  /// The same formulas as value_and_derivative, in one loop the compiler
  /// vectorizes: exp and log1p from detail::vector_math (within 2 ulp of
  /// libm's, and equal to them at 0, +-inf and NaN) and bit-mask selects
  /// instead of branches; every lane computes the same function, so a
  /// sample's results do not depend on its place in the block. Used by
  /// Linear's batched paths on host spaces. Fused: exp's and log1p's
  /// multiply-adds fused where the target has FMA (Sum's path only).
  template <int B, bool Fused = false, class Scalar>
  KOKKOS_FUNCTION static void block_values_and_derivatives(const Scalar* z, const Scalar* y,
                                                           Scalar* value, Scalar* dz) {
    namespace vm = detail::vector_math;
    for (int s = 0; s < B; ++s) {
      const Scalar t = z[s];
      const Scalar e = vm::exp<Fused>(vm::minus_abs(t));  // in [0, 1]
      const Scalar q = e / (Scalar(1) + e);  // residual(), without its branch
      dz[s] = vm::select(t >= Scalar(0), (Scalar(1) - y[s]) - q, q - y[s]);
      // (1 - y) t for t > 0, else (0 - y) t = -y t: value()'s two cases.
      const Scalar slope = vm::select(t > Scalar(0), Scalar(1), Scalar(0)) - y[s];
      value[s] = detail::multiply_add<Fused>(slope, t, vm::log1p_unit<Fused>(e));
    }
  }

  /// Writes d^2 l / dz^2 = sigmoid(z) (1 - sigmoid(z)) into `d2[0]`.
  template <class Scalar>
  KOKKOS_FUNCTION static void second_derivative(const Scalar* z, int /*num_outputs*/,
                                                Scalar /*y*/, Scalar* d2) {
    // Symmetric in z: q (1 - q) with q = sigmoid(-|z|), where 1 - q does
    // not cancel.
    const Scalar e = math::exp(-math::fabs(z[0]));
    const Scalar q = e / (Scalar(1) + e);
    d2[0] = q * (Scalar(1) - q);
  }

  /// Writes the probability of class 1, sigmoid(z), into `p[0]`.
  template <class Scalar>
  KOKKOS_FUNCTION static void probabilities(const Scalar* z, int /*num_outputs*/, Scalar* p) {
    p[0] = sigmoid(z[0]);
  }
  /// The predicted class: 1 when the logit is positive, else 0.
  template <class Scalar>
  KOKKOS_FUNCTION static int predict_class(const Scalar* z,
                                           int /*num_outputs*/) {
    return z[0] > Scalar(0) ? 1 : 0;
  }
};

}  // namespace gradsum
