// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What every worker of a step must agree on before the first collective.

#include <gradsum/core/error.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/optimizer/detail/learning_rate.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
#include <cstdint>

namespace gradsum {
namespace detail {

/// What every worker of a step must agree on: sizes, scalar type, policy
/// names, the objective and the learning rate.
template <class Scalar, class Model, class Loss, class Optimizer, class Gradient, class Reduction,
          class Aggregation>
Signature step_signature(const Model& model, const Loss& loss, const Optimizer& optimizer,
                         const Objective& objective, const Gradient& gradient,
                         const Reduction& reduction, const Aggregation& aggregation) {
  Signature sig;
  sig.add("number of parameters", model.num_parameters());
  sig.add("number of features", model.num_features());
  sig.add("number of outputs", model.num_outputs());
  if constexpr (has_architecture<Model>::value) sig.add("model architecture", model.architecture());
  sig.add("scalar size in bytes", std::int64_t(sizeof(Scalar)));
  sig.add_hash("policies", concat(model.name(), '/', loss.name(), '/', gradient.name(), '/',
                                  reduction.name(), '/', aggregation.name(), '/',
                                  optimizer.name()));
  sig.add("objective mean", objective.mean ? 1 : 0);
  sig.add_bits("objective l2", objective.l2);
  sig.add("non-finite policy", objective.on_nonfinite == NonFinite::skip ? 1 : 0);
  // Ranks updating with different rates would drift apart silently.
  const double lr = learning_rate(optimizer);
  if (!std::isnan(lr)) sig.add_bits("learning rate", lr);
  return sig;
}

}  // namespace detail
}  // namespace gradsum
