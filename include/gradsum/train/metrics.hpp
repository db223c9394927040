// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

template <class Model, class Loss, class Scalar, class X, class Y>
struct CountCorrect {
  Model model;
  Loss loss;
  const Scalar* theta;
  X x;
  Y y;

  KOKKOS_FUNCTION void operator()(std::int64_t r, std::int64_t& correct) const {
    Scalar z[output_capacity<Model>::value] = {};
    model.forward(theta, &x(r, 0), z);
    if (Scalar(loss.predict_class(z, model.num_outputs())) == y(r)) ++correct;
  }
};

}  // namespace detail

/// Number of rows of `data` whose predicted class (the loss's
/// predict_class of the model's outputs at `theta`) equals the target.
/// Local to this process. Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
std::int64_t count_correct(const ExecutionSpace& space, const Model& model,
                           const Loss& loss, const Theta& theta,
                           const Data& data) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_classifier_loss_v<Loss, Scalar>,
                "gradsum::count_correct: the Loss must provide `int "
                "predict_class(const Scalar* z, int k) const` (a classifier)");
  if (data.num_features() != model.num_features())
    detail::fail("gradsum::count_correct: the data have ", data.num_features(),
                 " features but model ", model.name(), " expects ",
                 model.num_features());
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    detail::fail("gradsum::count_correct: theta has ", theta.extent(0),
                 " entries but model ", model.name(), " has ",
                 model.num_parameters(), " parameters");
  // A network beyond the per-sample limits runs layer by layer.
  if constexpr (detail::has_dense_layers<Model>::value)
    if (!detail::within_per_sample_limits(model))
      return detail::layerwise_count_correct(space, model, loss, theta, data);
  std::int64_t correct = 0;
  Kokkos::parallel_reduce(
      "gradsum::metrics::count_correct",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
          space, 0, data.num_samples()),
      detail::CountCorrect<Model, Loss, Scalar, typename Data::features_view,
                           typename Data::targets_view>{
          model, loss, theta.data(), data.features(), data.targets()},
      correct);
  return correct;
}

}  // namespace gradsum
