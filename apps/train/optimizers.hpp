// SPDX-License-Identifier: Apache-2.0
#pragma once

// The optimizer --optimizer names, set up by the flags, and the run with it.
// Two Step types per model and loss, not ten: FirstOrder picks among the
// seven first-order methods at run time, LineSearchMethod among the three
// others (Newton, steepest descent and L-BFGS, which evaluate the
// objective more than once per step or need its Hessian).

#include "train.hpp"

#include <cmath>
#include <type_traits>

namespace gradsum_train {

/// The first-order method --optimizer names, with --lr, --momentum,
/// --beta1, --beta2, --eps and --weight-decay.
inline gradsum::FirstOrder first_order_method(const Options& o) {
  auto with_lr = [&](auto optimizer) -> gradsum::FirstOrder {
    if (o.lr_given) optimizer.lr = o.lr;
    return optimizer;
  };
  auto with_eps = [&](auto optimizer) {
    if (o.eps > 0) optimizer.eps = o.eps;
    return with_lr(optimizer);
  };
  auto adam = [&](auto optimizer) {
    optimizer.beta1 = o.beta1;
    optimizer.beta2 = o.beta2;
    if (o.weight_decay >= 0) optimizer.weight_decay = o.weight_decay;
    return with_eps(optimizer);
  };
  switch (o.optimizer) {
    case Optimizer::sgd: return with_lr(gradsum::SGD{o.lr});
    case Optimizer::momentum: return with_lr(gradsum::Momentum{0.01, o.momentum});
    case Optimizer::nesterov: return with_lr(gradsum::Nesterov{0.01, o.momentum});
    case Optimizer::adagrad: return with_eps(gradsum::AdaGrad{});
    case Optimizer::rmsprop: return with_eps(gradsum::RMSProp{});
    case Optimizer::adam: return adam(gradsum::Adam{});
    case Optimizer::adamw: return adam(gradsum::AdamW{});
    case Optimizer::newton: case Optimizer::steepest: case Optimizer::lbfgs: break;
  }
  gradsum::fail_agreed("--optimizer: ", name(o.optimizer), " is no first-order method");
}

/// The line-search method --optimizer names, with --lr (Newton's step,
/// steepest descent's first trial step), --line-search and --history.
inline gradsum::LineSearchMethod line_search_method(const Options& o) {
  if (o.optimizer == Optimizer::newton) {
    gradsum::Newton newton;
    if (o.lr_given) newton.lr = o.lr;
    return newton;
  }
  if (o.optimizer == Optimizer::steepest) {
    gradsum::SteepestDescent sd;
    if (o.lr_given) sd.initial_step = o.lr;
    if (o.line_search == "exact") sd.line_search = gradsum::SteepestDescent::LineSearch::exact;
    else if (!o.line_search.empty() && o.line_search != "armijo")
      gradsum::fail_agreed("--line-search: steepest takes armijo or exact, got '", o.line_search, "'");
    return sd;
  }
  gradsum::LBFGS lbfgs;
  lbfgs.m = o.history;
  if (o.line_search == "armijo") lbfgs.line_search = gradsum::LBFGS::LineSearch::armijo;
  else if (!o.line_search.empty() && o.line_search != "wolfe")
    gradsum::fail_agreed("--line-search: lbfgs takes wolfe or armijo, got '", o.line_search, "'");
  return lbfgs;
}

/// Trains `model` with `loss` and the optimizer the flags name; first-order
/// methods follow --schedule and --clip-norm.
template <class Space, class Model, class Loss>
int with_optimizer(const Context& context, const Model& model, const Loss& loss,
                   const Aggregation& aggregation) {
  const Options& o = context.options;
  if (is_first_order(o.optimizer)) {
    const gradsum::Scheduled<gradsum::FirstOrder> scheduled(
        first_order_method(o), parse_schedule(o.schedule).with_warmup(o.warmup));
    // Without --clip-norm the bound is infinite: one type either way.
    return train<Space>(context, model, loss,
                        gradsum::clip_gradient_norm(scheduled, o.clip_norm > 0 ? o.clip_norm : HUGE_VAL),
                        aggregation);
  }
  if constexpr (std::is_same<Model, gradsum::MLP>::value)
    gradsum::fail_agreed("--optimizer: ", name(o.optimizer), " does not train --model mlp");  // parse() refuses it
  else
    return train<Space>(context, model, loss, line_search_method(o), aggregation);
}

}  // namespace gradsum_train
