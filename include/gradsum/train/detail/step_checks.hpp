// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Run-time checks of a step's policy choices that the types alone cannot
/// decide: an optimizer whose knobs ask for the Hessian of a model or loss
/// without second derivatives, and what Step::measure_workers can measure.

#include <gradsum/core/error.hpp>
#include <gradsum/core/requirements.hpp>

#include <string>

namespace gradsum {
namespace detail {

/// What the Hessian needs that the model or loss lacks, naming each
/// missing member, or "" when both provide it.
template <class Scalar, class Model, class Loss>
std::string missing_hessian(const std::string& optimizer, const Model& model, const Loss& loss) {
  constexpr bool model_has = has_model_hessian<Model, Scalar>::value;
  constexpr bool loss_has = has_second_derivative<Loss, Scalar>::value;
  if (model_has && loss_has) return {};
  return concat("gradsum::Step: optimizer ", optimizer, " needs the Hessian, which model ",
                model.name(), " with loss ", loss.name(), " does not provide: ",
                model_has ? "" : "the Model must provide `hessian(const Scalar* theta, const "
                                 "Scalar* x, const Scalar* d2, Scalar* H) const`",
                model_has || loss_has ? "" : " and ",
                loss_has ? "" : "the Loss must provide `second_derivative(const Scalar* z, "
                                "int k, Scalar y, Scalar* d2) const`",
                " (Linear and Softmax with the library's losses do); choose a method "
                "without it (e.g. SteepestDescent with LineSearch::armijo, or LBFGS)");
}

/// Refuses, in a step's constructor, an optimizer whose run-time choice
/// (`uses_hessian()`, e.g. an exact line search) needs a Hessian the model
/// or loss cannot give; throws gradsum::Error. (A static `needs_hessian`
/// is refused at compile time by check_step_policies.)
template <class Scalar, class Model, class Loss, class Optimizer>
void check_hessian_use(const Model& model, const Loss& loss, const Optimizer& optimizer) {
  if (!optimizer_uses_hessian(optimizer)) return;
  const std::string error = missing_hessian<Scalar>(optimizer.name(), model, loss);
  if (!error.empty()) throw Error(error);
}

/// The checks of Step::measure_workers(parts_per_rank): a count in
/// [0, 2^20], measured only where the workers' gradients are summed
/// (`robust` false) as plain floating-point sums (`bins` false).
inline void check_measure_workers(int parts_per_rank, bool robust, bool bins,
                                  const std::string& reduction) {
  if (parts_per_rank < 0 || parts_per_rank > (1 << 20))
    fail("gradsum::Step::measure_workers: parts_per_rank must be in [0, 2^20], got ",
         parts_per_rank);
  if (parts_per_rank > 0 && robust)
    fail("gradsum::Step::measure_workers: a robust combination of workers (median, "
         "trimmed mean, norm clipping) does not sum their gradients, so the noise "
         "estimates would not hold; measure with the plain sum of workers");
  if (parts_per_rank > 0 && bins)
    fail("gradsum::Step::measure_workers: the ", reduction, " reduction "
         "aggregates integer bins, not per-worker sums; measure with the sum or "
         "compensated reduction");
}

}  // namespace detail
}  // namespace gradsum
