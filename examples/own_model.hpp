// SPDX-License-Identifier: Apache-2.0
// The model of examples/own_model.cpp: y = a exp(b x) + c as a gradsum
// Model. A model is a small value type; kernels copy it and call its
// KOKKOS_FUNCTION members on every sample.
#pragma once

#include <gradsum/gradsum.hpp>

// theta = (a, b, c); one feature x, one output z = a exp(b x) + c.
struct Exponential {
  // One output: per-sample arrays need room for one value only.
  static constexpr int output_capacity = 1;

  // The name in messages, checkpoints and the workers' signature.
  static const char* name() { return "exponential"; }
  KOKKOS_FUNCTION int num_features() const { return 1; }
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  KOKKOS_FUNCTION int num_parameters() const { return 3; }
  // No parameter takes the L2 penalty.
  KOKKOS_FUNCTION bool is_regularized(int /*j*/) const { return false; }

  // z[0] = a exp(b x) + c for one sample x[0].
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x, Scalar* z) const {
    z[0] = theta[0] * gradsum::math::exp(theta[1] * x[0]) + theta[2];
  }

  // g += dz[0] * dz/dtheta: ADD, never assign. g already holds the sums
  // of the other samples of the batch.
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    const Scalar e = gradsum::math::exp(theta[1] * x[0]);
    g[0] += dz[0] * e;                    // dz/da = exp(b x)
    g[1] += dz[0] * theta[0] * x[0] * e;  // dz/db = a x exp(b x)
    g[2] += dz[0];                        // dz/dc = 1
  }
};
