// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

namespace gradsum {

/// Plain gradient descent: theta <- theta - lr * g.
///
/// Batch, mini-batch and stochastic gradient descent are this same update
/// applied to the gradient of the whole training set, of B samples, or of
/// one sample: the batch size is chosen when sampling (MiniBatchSampler and
/// gradsum-train --batch: 0 = full batch, 1 = stochastic, B = mini-batch).
/// References: Robbins & Monro 1951; Bottou, Curtis & Nocedal, SIAM Review
/// 60(2), 2018.
struct SGD {
  /// Learning rate (step size), > 0 and finite.
  double lr = 0.01;

  /// Short name used in messages and command lines.
  static const char* name() { return "sgd"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  /// Rejects a learning rate that is not positive and finite.
  void validate() const { detail::require_positive("SGD", "learning rate lr", lr); }
  /// SGD keeps no state vectors.
  static int state_size(int /*num_parameters*/) { return 0; }

  /// theta(j) -= lr * g(j), as a kernel on the context's space. Asynchronous.
  template <class Context>
  void update(Context& ctx) {
    using Scalar = typename Context::scalar_type;
    const Scalar step = Scalar(lr);
    auto theta = ctx.parameters();
    auto g = ctx.gradient();
    Kokkos::parallel_for(
        "gradsum::optimizer::sgd", ctx.policy(),
        KOKKOS_LAMBDA(int j) { theta(j) -= step * g(j); });
  }
};

}  // namespace gradsum
