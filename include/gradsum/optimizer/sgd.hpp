// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <cmath>

namespace gradsum {

/// Plain gradient descent: theta <- theta - lr * g.
///
/// Batch, mini-batch and stochastic gradient descent are this same update
/// applied to the gradient of the whole training set, of B samples, or of
/// one sample (Robbins & Monro 1951; Bottou, Curtis & Nocedal, SIAM Review
/// 60(2), 2018). The batch size is chosen by the caller, not here.
struct SGD {
  /// Learning rate (step size), > 0 and finite.
  double lr = 0.01;

  /// Short name used in messages and command lines.
  static const char* name() { return "sgd"; }

  /// Rejects a learning rate that is not positive and finite.
  void validate() const {
    if (!(lr > 0) || !std::isfinite(lr))
      detail::fail("gradsum::SGD: learning rate lr must be positive and "
                   "finite, got ",
                   lr);
  }

  /// SGD keeps no state.
  template <class Scalar, class MemorySpace>
  void allocate(int /*num_parameters*/) {}

  /// theta(j) -= lr * g(j) for every j, as a kernel on `space`. Asynchronous.
  template <class ExecutionSpace, class Theta, class Gradient>
  void update(const ExecutionSpace& space, const Theta& theta,
              const Gradient& g) {
    using Scalar = typename Theta::non_const_value_type;
    const Scalar step = Scalar(lr);
    Kokkos::parallel_for(
        "gradsum::optimizer::sgd",
        Kokkos::RangePolicy<ExecutionSpace>(space, 0, int(theta.extent(0))),
        KOKKOS_LAMBDA(int j) { theta(j) -= step * g(j); });
  }
};

}  // namespace gradsum
