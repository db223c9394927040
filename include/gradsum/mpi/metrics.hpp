// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// accuracy, mean_loss and regression_scores over data sharded across the
/// ranks: every rank counts its own rows, allreduces sum the counts.

#include <gradsum/core/error.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/train/metrics.hpp>
#include <gradsum/train/objective.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace gradsum {
namespace mpi {
namespace detail {

/// Sums every rank's tallies (one MPI_Allreduce) and throws the same
/// gradsum::Error on every rank when the data or theta of any rank do not
/// fit `model`: a rank that threw alone would leave the others waiting.
template <class Model>
gradsum::detail::MetricTallies global_tallies(const char* who, const Communicator& comm,
                                              const Model& model,
                                              const gradsum::detail::MetricTallies& mine) {
  double sums[4] = {mine.problem.empty() ? 0.0 : 1.0, mine.rows, mine.value, mine.invalid};
  check(MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, comm.get()), "MPI_Allreduce");
  if (sums[0] > 0)
    fail_agreed(who, ": the data or theta of ", std::int64_t(sums[0]), " of ",
                          comm.size(), " rank(s) do not fit model ", model.name(), " (",
                          model.num_features(), " features, ", model.num_parameters(),
                          " parameters)");
  gradsum::detail::MetricTallies total;
  total.rows = sums[1];
  total.value = sums[2];
  total.invalid = sums[3];
  return total;
}

}  // namespace detail

/// The fraction of all rows of every rank's `data` (each rank its own
/// shard) that the classifier `loss` labels correctly at `theta` (the
/// same on every rank): the summed count_correct over the summed row
/// count, the same value on every rank. Throws the same gradsum::Error on
/// every rank when any rank's data or theta do not fit the model, or no
/// rank holds a row. Blocking; collective over `comm`.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
double accuracy(const ExecutionSpace& space, const Communicator& comm, const Model& model,
                const Loss& loss, const Theta& theta, const Data& data) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_classifier_loss_v<Loss, Scalar>,
                "gradsum::mpi::accuracy: the Loss must provide `int predict_class(const "
                "Scalar* z, int k) const` (a classifier)");
  const char* who = "gradsum::mpi::accuracy";
  const auto t = detail::global_tallies(
      who, comm, model,
      gradsum::detail::metric_tallies<true>(space, model, loss, theta, data, who));
  if (!(t.rows > 0)) fail_agreed(who, ": no rank holds a row");
  return t.value / t.rows;
}

/// The objective J at `theta` over all rows of every rank's `data`: by
/// default the mean loss over the global row count; with an `objective`,
/// its L2 term added once and, with `mean = false`, the global sum (what
/// a Step with that objective and the Allreduce aggregation reports over
/// the same rows). Throws the same gradsum::Error on every rank when any
/// rank's data or theta do not fit the model, a target anywhere is one
/// the loss rejects, or a mean has no rows. Blocking; collective over
/// `comm`.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
double mean_loss(const ExecutionSpace& space, const Communicator& comm, const Model& model,
                 const Loss& loss, const Theta& theta, const Data& data,
                 const Objective& objective = Objective{}) {
  using Scalar = typename Data::scalar_type;
  static_assert(is_loss_v<Loss, Scalar>,
                "gradsum::mpi::mean_loss: the Loss must provide name(), supports_outputs(k), "
                "is_valid_target(y, k), value(z, k, y) and derivative(z, k, y, dz)");
  objective.validate();  // the same objective on every rank: the same outcome
  const char* who = "gradsum::mpi::mean_loss";
  const auto t = detail::global_tallies(
      who, comm, model,
      gradsum::detail::metric_tallies<false>(space, model, loss, theta, data, who));
  return gradsum::detail::objective_from_tallies(
      who, "over the ranks", t, loss, model.num_outputs(), objective,
      gradsum::detail::l2_penalty(space, model, theta, objective.l2));
}

/// RMSE and R^2 (gradsum::RegressionScores) of the model's single output
/// at `theta` over all rows of every rank's `data` (each rank its own
/// shard), the same on every rank: the global mean of the targets first
/// (one allreduce), then the squared deviations and residuals (another).
/// Throws the same gradsum::Error on every rank when any rank's data or
/// theta do not fit the model, the model has more than one output, or no
/// rank holds a row. Blocking; collective over `comm`.
template <class ExecutionSpace, class Model, class Theta, class Data>
RegressionScores regression_scores(const ExecutionSpace& space, const Communicator& comm,
                                   const Model& model, const Theta& theta, const Data& data) {
  const char* who = "gradsum::mpi::regression_scores";
  auto t = gradsum::detail::regression_target_sum(space, model, theta, data);
  double first[3] = {t.problem.empty() ? 0.0 : 1.0, t.rows, t.targets};
  check(MPI_Allreduce(MPI_IN_PLACE, first, 3, MPI_DOUBLE, MPI_SUM, comm.get()), "MPI_Allreduce");
  if (first[0] > 0)
    fail_agreed(who, ": the data or theta of ", std::int64_t(first[0]), " of ", comm.size(),
                " rank(s) do not fit model ", model.name(), " (", model.num_features(),
                " features, ", model.num_outputs(), " output(s), ", model.num_parameters(),
                " parameters; one output is scored)");
  if (!(first[1] > 0)) fail_agreed(who, ": no rank holds a row");
  gradsum::detail::regression_squares(space, model, theta, data, first[2] / first[1], t, who);
  double second[2] = {t.deviations, t.residuals};
  check(MPI_Allreduce(MPI_IN_PLACE, second, 2, MPI_DOUBLE, MPI_SUM, comm.get()), "MPI_Allreduce");
  return {std::sqrt(second[1] / first[1]),
          second[0] > 0 ? 1 - second[1] / second[0] : std::nan(""), std::int64_t(first[1])};
}

}  // namespace mpi
}  // namespace gradsum
