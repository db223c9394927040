// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How well parameters fit a data set: count_correct, accuracy,
/// mean_loss, and for regression rmse and r2_score, local to this process
/// (mpi/metrics.hpp has their collective versions over sharded data).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/train/detail/model_outputs.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
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

/// One process's share of the regression scores: its rows, the sums of
/// its targets, of their squared deviations from a given mean, and of the
/// squared residuals (z - y)^2; what does not fit (then nothing is summed).
struct RegressionTallies {
  double rows = 0, targets = 0, deviations = 0, residuals = 0;
  std::string problem;
};

/// The rows and the sum of the targets of `data` (the first pass), or why
/// `model` cannot be scored on them. Blocking.
template <class Space, class Model, class Theta, class Data>
RegressionTallies regression_target_sum(const Space& space, const Model& model,
                                        const Theta& theta, const Data& data) {
  RegressionTallies t;
  t.problem = metric_shape_problem(model, theta, data);
  if (t.problem.empty() && model.num_outputs() != 1)
    t.problem = concat("model ", model.name(), " has ", model.num_outputs(),
                       " outputs; RMSE and R^2 compare one output with the target");
  if (!t.problem.empty()) return t;
  const auto y = data.targets();
  t.rows = double(data.num_samples());
  Kokkos::parallel_reduce(
      "gradsum::metrics::target_sum",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, data.num_samples()),
      KOKKOS_LAMBDA(std::int64_t r, double& sum) { sum += double(y(r)); }, t.targets);
  return t;
}

/// Adds to `t` the squared deviations of the targets from `mean` and the
/// squared residuals of `model` at `theta` (the second pass). Two passes
/// rather than sums of squares: R^2 of targets far from zero keeps its
/// digits. Blocking.
template <class Space, class Model, class Theta, class Data>
void regression_squares(const Space& space, const Model& model, const Theta& theta,
                        const Data& data, double mean, RegressionTallies& t, const char* who) {
  using Scalar = typename Data::scalar_type;
  const auto y = data.targets();
  Kokkos::parallel_reduce(
      "gradsum::metrics::target_deviations",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, data.num_samples()),
      KOKKOS_LAMBDA(std::int64_t r, double& sum) {
        sum += (double(y(r)) - mean) * (double(y(r)) - mean);
      },
      t.deviations);
  t.residuals = reduce_outputs<double>(
      space, model, theta, data.features(),
      KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, double& sum) {
        sum += (double(z[0]) - double(y(r))) * (double(z[0]) - double(y(r)));
      },
      who, "gradsum::metrics::residuals");
}

}  // namespace detail

/// How well a model with one output fits regression targets: the root mean
/// squared error sqrt((1/n) sum_i (z_i - y_i)^2), in the targets' units,
/// and the coefficient of determination R^2 = 1 - sum_i (z_i - y_i)^2 /
/// sum_i (y_i - mean y)^2 (1 for a perfect fit, 0 for predicting the mean,
/// negative for worse; NaN when every target is the same, where it is
/// undefined). With SquaredError, rmse = sqrt(2 mean_loss).
struct RegressionScores {
  double rmse = 0;
  double r2 = 0;
  std::int64_t rows = 0;  ///< the rows scored
};

/// RMSE and R^2 (RegressionScores) of the model's single output at `theta`
/// over every row of `data`; the loss plays no part. Throws gradsum::Error
/// when the model has more than one output, the data or theta do not fit
/// it, or the data hold no rows. Local to this process
/// (mpi::regression_scores is the global one over sharded data). Blocking.
template <class ExecutionSpace, class Model, class Theta, class Data>
RegressionScores regression_scores(const ExecutionSpace& space, const Model& model,
                                   const Theta& theta, const Data& data) {
  const char* who = "gradsum::regression_scores";
  auto t = detail::regression_target_sum(space, model, theta, data);
  if (!t.problem.empty()) fail(who, ": ", t.problem);
  if (!(t.rows > 0)) fail(who, ": the data hold no rows");
  detail::regression_squares(space, model, theta, data, t.targets / t.rows, t, who);
  return {std::sqrt(t.residuals / t.rows),
          t.deviations > 0 ? 1 - t.residuals / t.deviations : std::nan(""),
          std::int64_t(t.rows)};
}

/// The root mean squared error of the model's single output at `theta`
/// over `data`: regression_scores(...).rmse. Local; blocking.
template <class ExecutionSpace, class Model, class Theta, class Data>
double rmse(const ExecutionSpace& space, const Model& model, const Theta& theta,
            const Data& data) {
  return regression_scores(space, model, theta, data).rmse;
}

/// The coefficient of determination R^2 of the model's single output at
/// `theta` over `data`: regression_scores(...).r2. Local; blocking.
template <class ExecutionSpace, class Model, class Theta, class Data>
double r2_score(const ExecutionSpace& space, const Model& model, const Theta& theta,
                const Data& data) {
  return regression_scores(space, model, theta, data).r2;
}

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
