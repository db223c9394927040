// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/gradient/analytic.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace gradsum {
namespace detail {

/// One sample's loss at the parameters `theta` (no derivative).
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct LossBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const std::int64_t r = this->rows(i);
    Scalar z[output_capacity<Model>::value] = {};
    FeatureRoom<X> room;
    this->model.forward(this->theta, room.row(this->x, r), z);
    acc[0] += this->loss.value(z, this->model.num_outputs(), this->y(r));
  }
};

}  // namespace detail

/// Two-sided finite differences of the summed loss L:
///
///     g_j = (L(theta + h e_j) - L(theta - h e_j)) / (2 h),
///
/// with truncation error O(h^2) (Nocedal & Wright, Numerical Optimization,
/// 2nd ed., sec. 8.1). Costs 2P + 1 passes over the rows; meant for
/// checking analytic gradients and for models without a backward pass:
/// it calls only the model's forward(), so a Step with it accepts a model
/// that meets is_forward_model (no backward()).
/// The default h = 1e-6 balances truncation against rounding for double
/// data of moderate scale; use a larger h (about 1e-3) for float.
struct CentralDifference {
  /// The step h (> 0, finite).
  double eps = 1e-6;

  /// Short name used in messages and command lines.
  static const char* name() { return "central_difference"; }
  /// Only forward() is called: the model needs no backward().
  static constexpr bool needs_backward = false;
  /// A perturbed copy of theta plus two loss values.
  static std::size_t workspace_size(int num_parameters) {
    return std::size_t(num_parameters) + 2;
  }
  /// Rejects a non-positive or non-finite step.
  void validate() const {
    if (!(eps > 0) || !std::isfinite(eps))
      fail("gradsum::CentralDifference: eps must be positive and "
                   "finite, got ",
                   eps);
  }

  /// Writes the finite-difference gradient of the summed loss into
  /// out(0 … P) and the summed loss into out(P). Asynchronous.
  template <class ExecutionSpace, class Model, class Loss, class Reduction,
            class Theta, class Data, class Rows, class Out, class Work>
  void sum(const ExecutionSpace& space, const Model& model, const Loss& loss,
           const Reduction& reduction, const Theta& theta, const Data& data,
           const Rows& rows, const Out& out, const Work& work) const {
    using Scalar = typename Data::scalar_type;
    using Body = detail::LossBody<Model, Loss, Scalar,
                                  typename Data::features_view,
                                  typename Data::targets_view, Rows>;
    using Policy = Kokkos::RangePolicy<ExecutionSpace>;
    const int P = model.num_parameters();
    const Scalar h = Scalar(eps);
    const Body body{{model, loss, work.data(), data.features(), data.targets(), rows}};
    auto perturbed = Kokkos::subview(work, Kokkos::make_pair(0, P));
    auto plus = Kokkos::subview(work, Kokkos::make_pair(P, P + 1));
    auto minus = Kokkos::subview(work, Kokkos::make_pair(P + 1, P + 2));
    Kokkos::deep_copy(space, perturbed, theta);
    for (int j = 0; j < P; ++j) {
      Kokkos::parallel_for(
          "gradsum::gradient::central_difference::plus", Policy(space, 0, 1),
          KOKKOS_LAMBDA(int) { work(j) = theta(j) + h; });
      reduction.reduce(space, "gradsum::gradient::central_difference::loss",
                       rows.size(), 1, body, plus);
      Kokkos::parallel_for(
          "gradsum::gradient::central_difference::minus", Policy(space, 0, 1),
          KOKKOS_LAMBDA(int) { work(j) = theta(j) - h; });
      reduction.reduce(space, "gradsum::gradient::central_difference::loss",
                       rows.size(), 1, body, minus);
      Kokkos::parallel_for(
          "gradsum::gradient::central_difference::store", Policy(space, 0, 1),
          KOKKOS_LAMBDA(int) {
            out(j) = (work(P) - work(P + 1)) / (2 * h);
            work(j) = theta(j);
          });
    }
    reduction.reduce(space, "gradsum::gradient::central_difference::loss",
                     rows.size(), 1, body,
                     Kokkos::subview(out, Kokkos::make_pair(P, P + 1)));
  }
};

}  // namespace gradsum
