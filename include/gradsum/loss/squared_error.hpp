// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>

namespace gradsum {

/// Squared error for regression: l(z, y) = (z - y)^2 / 2, dl/dz = z - y.
///
/// Needs a model with one output; any finite target is valid. With a mean
/// objective this is half the mean squared error, whose minimiser is the
/// least-squares solution (normal equations X^T X w = X^T y).
struct SquaredError {
  /// Short name used in messages and command lines.
  static const char* name() { return "squared_error"; }

  /// Whether a model with `num_outputs` outputs can feed this loss.
  static bool supports_outputs(int num_outputs) { return num_outputs == 1; }

  /// Whether `y` is a valid target for a model with `num_outputs` outputs.
  template <class Scalar>
  KOKKOS_FUNCTION static bool is_valid_target(Scalar y, int /*num_outputs*/) {
    return math::isfinite(y);
  }

  /// The loss of one sample with model output `z[0]` and target `y`.
  template <class Scalar>
  KOKKOS_FUNCTION static Scalar value(const Scalar* z, int /*num_outputs*/,
                                      Scalar y) {
    const Scalar r = z[0] - y;
    return r * r / 2;
  }

  /// Writes dl/dz into `dz[0]`.
  template <class Scalar>
  KOKKOS_FUNCTION static void derivative(const Scalar* z, int /*num_outputs*/,
                                         Scalar y, Scalar* dz) {
    dz[0] = z[0] - y;
  }

  /// value and derivative for a block of B one-output samples: writes
  /// z[s] - y[s] into dz[s] and the loss into value[s] for every s < B
  /// (Linear's batched paths).
  template <int B, class Scalar>
  KOKKOS_FUNCTION static void block_values_and_derivatives(const Scalar* z, const Scalar* y,
                                                           Scalar* value, Scalar* dz) {
    for (int s = 0; s < B; ++s) {
      dz[s] = z[s] - y[s];
      value[s] = dz[s] * dz[s] / 2;
    }
  }

  /// The objective is quadratic in the outputs (exact line search applies).
  static constexpr bool is_quadratic = true;

  /// Writes d^2 l / dz^2 = 1 into `d2[0]`.
  template <class Scalar>
  KOKKOS_FUNCTION static void second_derivative(const Scalar* /*z*/, int /*num_outputs*/,
                                                Scalar /*y*/, Scalar* d2) {
    d2[0] = Scalar(1);
  }
};

}  // namespace gradsum
