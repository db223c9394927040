// SPDX-License-Identifier: Apache-2.0
#pragma once

// Minimal user-written models for the requirement traits, shared by
// test_requirements.cpp and the compile-fail tests.

#include <gradsum/gradsum.hpp>

// A named namespace: in an unnamed one nvcc warns about members never
// referenced.
namespace fakes {

// The step's kernels call num_outputs(), num_parameters() and
// is_regularized(j) as well as forward and backward: all KOKKOS_FUNCTION.
struct MinimalModel {
  static const char* name() { return "minimal"; }
  int num_features() const { return 1; }
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  KOKKOS_FUNCTION int num_parameters() const { return 1; }
  KOKKOS_FUNCTION bool is_regularized(int) const { return true; }
  template <class S>
  KOKKOS_FUNCTION void forward(const S* theta, const S* x, S* z) const { z[0] = theta[0] * x[0]; }
  template <class S>
  KOKKOS_FUNCTION void backward(const S*, const S* x, const S* dz, S* g) const { g[0] += dz[0] * x[0]; }
};

// A model with forward only: z = a x + b x^2 (P = 2), KOKKOS_FUNCTION like
// every member the kernels call. Its gradient comes from CentralDifference.
struct ForwardOnlyModel {
  static const char* name() { return "forward_only"; }
  int num_features() const { return 1; }
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  KOKKOS_FUNCTION int num_parameters() const { return 2; }
  KOKKOS_FUNCTION bool is_regularized(int) const { return true; }
  template <class S>
  KOKKOS_FUNCTION void forward(const S* theta, const S* x, S* z) const {
    z[0] = theta[0] * x[0] + theta[1] * x[0] * x[0];
  }
};

}  // namespace fakes
