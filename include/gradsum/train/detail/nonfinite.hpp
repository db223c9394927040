// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A step's non-finite sums: whether this worker's are, and, on the
/// failure path, which sample made the loss or its gradient non-finite.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>

#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// Whether any of v(0 … n) is NaN or infinite. Blocking.
template <class ExecutionSpace, class View>
bool any_nonfinite(const ExecutionSpace& space, const View& v, int n) {
  int bad = 0;
  Kokkos::parallel_reduce(
      "gradsum::step::check_finite", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j, int& count) { count += math::isfinite(v(j)) ? 0 : 1; }, bad);
  return bad > 0;
}

/// The first selected sample whose loss or loss derivative is not finite.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct FirstNonFiniteSample : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    const std::int64_t r = this->rows(i);
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar dz[capacity] = {};
    const int k = this->model.num_outputs();
    FeatureRoom<X> room;
    this->model.forward(this->theta, room.row(this->x, r), z);
    bool ok = math::isfinite(this->loss.value(z, k, this->y(r)));
    this->loss.derivative(z, k, this->y(r), dz);
    for (int c = 0; c < k; ++c) ok = ok && math::isfinite(dz[c]);
    if (!ok && i < first) first = i;
  }
};

/// On the failure path only: the first selected row whose loss or loss
/// derivative is not finite at theta.
template <class Scalar, class Space, class Model, class Loss, class Theta, class Data, class Rows>
std::string describe_nonfinite(const Space& space, const Model& model, const Loss& loss,
                               const Theta& theta, const Data& data, const Rows& rows) {
  if constexpr (is_network<Model>::value) {
    (void)space, (void)loss, (void)theta, (void)data, (void)rows;
    return "gradsum::Step::evaluate: the loss or its gradient is not finite (a network of "
           "layers: no single sample is named)";
  } else {
  if (!per_sample_limits(model).empty())  // no sample can be looked at on its own
    return "gradsum::Step::evaluate: the loss or its gradient is not finite (a network beyond "
           "the per-sample limits: no single sample is named)";
  std::int64_t first = INT64_MAX;
  using Functor = FirstNonFiniteSample<Model, Loss, Scalar, typename Data::features_view,
                                       typename Data::targets_view, Rows>;
  Kokkos::parallel_reduce(
      "gradsum::step::find_nonfinite",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows.size()),
      Functor{{model, loss, theta.data(), data.features(), data.targets(), rows}},
      Kokkos::Min<std::int64_t>(first));
  if (first == INT64_MAX)
    return "gradsum::Step::evaluate: the summed gradient is not finite (it overflowed; no "
           "single sample is)";
  return concat("gradsum::Step::evaluate: the loss or its gradient is not finite for sample ",
                first, " of the selected rows (its features and target are finite: the "
                "parameters or the model's outputs overflow)");
  }
}
template <class Scalar, class Space, class Model, class Loss, class Theta, class Data, class Rows>
std::string describe_nonfinite(const Space& space, const Model& model, const Loss& loss,
                               const Theta& theta, const Data& data,
                               const MicroBatches<Rows>& micro) {
  std::string message;
  for (std::size_t k = 0; k < micro.parts.size(); ++k) {
    message = describe_nonfinite<Scalar>(space, model, loss, theta, data, micro.parts[k]);
    if (message.find(" for sample ") != std::string::npos)
      return concat(message, " (in micro-batch ", k, ")");
  }
  return message;
}

}  // namespace detail
}  // namespace gradsum
