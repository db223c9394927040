// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How well parameters fit a data set: count_correct, accuracy and
/// mean_loss, local to this process (mpi/metrics.hpp has their collective
/// versions over sharded data).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/train/detail/model_outputs.hpp>
#include <gradsum/train/objective.hpp>

#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// What is wrong with `data` and `theta` for `model`, or "".
template <class Model, class Theta, class Data>
std::string metric_shape_problem(const Model& model, const Theta& theta, const Data& data) {
  if (data.num_features() != model.num_features())
    return concat("the data have ", data.num_features(), " features but model ", model.name(),
                  " expects ", model.num_features());
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    return concat("theta has ", theta.extent(0), " entries but model ", model.name(), " has ",
                  model.num_parameters(), " parameters");
  if (!outputs_layerwise(model, data.features())) return gather_limit("", data.features());
  return {};
}

/// One process's share of a metric: its rows, their correct predictions
/// or summed loss (`value`), the rows whose target the loss rejects, and
/// what does not fit (then nothing is counted).
struct MetricTallies {
  double rows = 0;
  double value = 0;
  double invalid = 0;
  std::string problem;
};

/// The tallies of the correct predictions (`correct`) or of the loss over
/// every row of `data`. Blocking.
template <bool Correct, class Space, class Model, class Loss, class Theta, class Data>
MetricTallies metric_tallies(const Space& space, const Model& model, const Loss& loss,
                             const Theta& theta, const Data& data, const char* who) {
  using Scalar = typename Data::scalar_type;
  MetricTallies t;
  t.problem = metric_shape_problem(model, theta, data);
  if (!t.problem.empty()) return t;
  t.rows = double(data.num_samples());
  const int k = model.num_outputs();
  const auto y = data.targets();
  if constexpr (Correct) {
    t.value = double(reduce_outputs<std::int64_t>(
        space, model, theta, data.features(),
        KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, std::int64_t& sum) {
          if (Scalar(loss.predict_class(z, k)) == y(r)) ++sum;
        },
        who, "gradsum::metrics::count_correct"));
  } else {
    std::int64_t invalid = 0;
    Kokkos::parallel_reduce(
        "gradsum::metrics::check_targets",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                   data.num_samples()),
        KOKKOS_LAMBDA(std::int64_t r, std::int64_t& sum) {
          if (!loss.is_valid_target(y(r), k)) ++sum;
        },
        invalid);
    t.invalid = double(invalid);
    // A rejected target (a class beyond the outputs) is not evaluated.
    t.value = reduce_outputs<double>(
        space, model, theta, data.features(),
        KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, double& sum) {
          if (loss.is_valid_target(y(r), k)) sum += double(loss.value(z, k, y(r)));
        },
        who, "gradsum::metrics::loss");
  }
  return t;
}

/// (l2 / 2) ||W||^2 over the parameters `model` regularises. Blocking.
template <class Space, class Model, class Theta>
double l2_penalty(const Space& space, const Model& model, const Theta& theta, double l2) {
  if (l2 == 0) return 0;
  const auto* w = theta.data();
  double squares = 0;
  Kokkos::parallel_reduce(
      "gradsum::metrics::l2_penalty",
      Kokkos::RangePolicy<Space>(space, 0, int(model.num_parameters())),
      KOKKOS_LAMBDA(int j, double& sum) {
        if (model.is_regularized(j)) sum += double(w[j]) * double(w[j]);
      },
      squares);
  return l2 / 2 * squares;
}

/// The objective from the tallies of every row (of one process, or summed
/// over the ranks, `where`). Throws naming `who` for rejected targets or
/// a mean over no rows.
template <class Loss>
double objective_from_tallies(const char* who, const char* where, const MetricTallies& t,
                              const Loss& loss, int k, const Objective& objective,
                              double penalty) {
  if (t.invalid > 0)
    fail(who, ": ", std::int64_t(t.invalid), " row(s) ", where, " have a target the loss ",
         loss.name(), " rejects for ", k, " output(s)");
  if (objective.mean && !(t.rows > 0))
    fail(who, ": no rows ", where, " (a mean over none is undefined)");
  return (objective.mean ? t.value / t.rows : t.value) + penalty;
}

}  // namespace detail

/// Number of rows of `data` whose predicted class (the loss's
/// predict_class of the model's outputs at `theta`) equals the target.
/// A network beyond the per-sample limits runs layer by layer. Throws
/// gradsum::Error when the data or theta do not fit the model. Local to
/// this process. Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
std::int64_t count_correct(const ExecutionSpace& space, const Model& model,
                           const Loss& loss, const Theta& theta,
                           const Data& data) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_classifier_loss_v<Loss, Scalar>,
                "gradsum::count_correct: the Loss must provide `int "
                "predict_class(const Scalar* z, int k) const` (a classifier)");
  const auto t =
      detail::metric_tallies<true>(space, model, loss, theta, data, "gradsum::count_correct");
  if (!t.problem.empty()) fail("gradsum::count_correct: ", t.problem);
  return std::int64_t(t.value);
}

/// The fraction of the rows of `data` that the classifier `loss` labels
/// correctly from the model's outputs at `theta`: count_correct / n.
/// Throws gradsum::Error when the data hold no rows or do not fit the
/// model. Local to this process (mpi::accuracy is the global one over
/// sharded data). Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
double accuracy(const ExecutionSpace& space, const Model& model, const Loss& loss,
                const Theta& theta, const Data& data) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_classifier_loss_v<Loss, Scalar>,
                "gradsum::accuracy: the Loss must provide `int predict_class(const Scalar* z, "
                "int k) const` (a classifier)");
  const auto t = detail::metric_tallies<true>(space, model, loss, theta, data, "gradsum::accuracy");
  if (!t.problem.empty()) fail("gradsum::accuracy: ", t.problem);
  if (!(t.rows > 0)) fail("gradsum::accuracy: the data hold no rows");
  return t.value / t.rows;
}

/// The objective J at `theta` over every row of `data`: by default the
/// mean loss (1/n) sum_i l(f(theta, x_i), y_i); with an `objective`, its
/// L2 term (l2 / 2) ||W||^2 added and, with `mean = false`, the sum
/// instead of the mean, as a Step with that objective reports it. Throws
/// gradsum::Error when the data or theta do not fit the model, a target is
/// one the loss rejects, or a mean has no rows. Local to this process
/// (mpi::mean_loss is the global one over sharded data). Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
double mean_loss(const ExecutionSpace& space, const Model& model, const Loss& loss,
                 const Theta& theta, const Data& data, const Objective& objective = Objective{}) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_loss_v<Loss, Scalar>,
                "gradsum::mean_loss: the Loss must provide name(), supports_outputs(k), "
                "is_valid_target(y, k), value(z, k, y) and derivative(z, k, y, dz)");
  objective.validate();
  const auto t = detail::metric_tallies<false>(space, model, loss, theta, data, "gradsum::mean_loss");
  if (!t.problem.empty()) fail("gradsum::mean_loss: ", t.problem);
  return detail::objective_from_tallies("gradsum::mean_loss", "of the data", t, loss,
                                        model.num_outputs(), objective,
                                        detail::l2_penalty(space, model, theta, objective.l2));
}

}  // namespace gradsum
