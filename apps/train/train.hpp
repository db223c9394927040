// SPDX-License-Identifier: Apache-2.0
#pragma once

// One run of gradsum-train for a model, loss and optimizer chosen: the
// step, the loop (gradsum::fit) with the callbacks the flags ask for, and
// the reports after it.

#include "callbacks.hpp"
#include "context.hpp"
#include "inputs.hpp"
#include "report.hpp"
#include "save.hpp"
#include "suspects.hpp"
#include "watch.hpp"

#include <cmath>
#include <type_traits>
#include <utility>

namespace gradsum_train {

/// The step of `model`, `loss` and `optimizer` that the flags describe.
template <class Space, class Model, class Loss, class Optimizer>
auto make_step(const Options& o, const Model& model, const Loss& loss, const Optimizer& optimizer,
               const Aggregation& aggregation) {
  const gradsum::Objective objective{
      o.l2, true, o.skip_nonfinite ? gradsum::NonFinite::skip : gradsum::NonFinite::throw_error};
  // One rank: a robust rule combines --workers parts of each batch.
  const gradsum::VirtualWorkers<> gradient{
      aggregation.size() > 1 ? gradsum::RobustRule{} : robust_rule(o), o.workers};
  return gradsum::make_step<double>(Space(), model, loss, optimizer, objective, gradient,
                                    gradsum::RuntimeReduction::parse(o.reduce), aggregation);
}

/// The loop's options; with --resume, the checkpoint's parameters are
/// loaded into `theta` and the loop continues where it stopped.
template <class Step, class Theta>
gradsum::FitOptions fit_options(const Context& context, Step& step, Theta& theta) {
  const Options& o = context.options;
  gradsum::FitOptions loop;
  loop.epochs = o.epochs;
  loop.batch = o.batch;
  loop.accumulate = o.accumulate;
  loop.seed = o.seed;
  loop.stopping = gradsum::StoppingRules{o.max_steps, o.grad_tol, o.loss_tol};
  if (o.resume.empty()) return loop;
  gradsum::CheckpointData saved;
  loop.start = gradsum::load_checkpoint(o.resume, step, theta, &saved);
  loop.start_file = o.resume;
  loop.loop = std::move(saved.loop);  // early stopping, best parameters, stopping rules
  // Each rank read its own copy of the checkpoint.
  gradsum::on_every_rank(step.aggregation(), [&] {
    if (loop.start.seed != o.seed)
      gradsum::fail("--resume: '", o.resume, "' was written with --seed ", loop.start.seed,
                    ", this run has --seed ", o.seed);
    if (saved.class_names != context.inputs.class_names)
      gradsum::fail("--resume: '", o.resume, "' was written for ", saved.class_names.size(),
                    " class names, this run's data has ", context.inputs.class_names.size(),
                    " other ones (the classes would be numbered differently)");
  });
  context.say("resumed from '%s' after epoch %lld, step %lld\n", o.resume.c_str(),
              static_cast<long long>(loop.start.epoch), static_cast<long long>(loop.start.step));
  return loop;
}

/// Trains `model` with `loss` and `optimizer` on `Space` and prints what
/// the flags ask for. The loop is gradsum::fit: the seeded order of epoch
/// e is the same on every rank, and a resumed run continues the
/// uninterrupted trajectory. Collective; returns the exit status.
template <class Space, class Model, class Loss, class Optimizer>
int train(const Context& context, const Model& model, const Loss& loss,
          const Optimizer& optimizer, const Aggregation& aggregation) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const Options& o = context.options;
  const Data data = to_device<Data>(context.inputs.train);
  const int ranks = aggregation.size();
  const auto my_rows = gradsum::partition(data.num_samples(), ranks, aggregation.rank());
  auto step = make_step<Space>(o, model, loss, optimizer, aggregation);
  prepare_workers(step, o, ranks);
  auto theta = step.make_parameters();
  if constexpr (std::is_same<Model, gradsum::MLP>::value)
    gradsum::initialize(model, gradsum::Initializer::parse(o.init).with_seed(o.seed), theta);
  if (!o.init_params.empty()) init_params(o, step, model, theta);
  if (o.print_gradient) {  // at the starting parameters, or the checkpoint's
    if (!o.resume.empty()) gradsum::load_checkpoint(o.resume, step, theta);
    print_gradient(context, step, theta, data, my_rows);
    return 0;
  }
  announce<Space>(context, step, model, loss, ranks);
  auto loop = fit_options(context, step, theta);
  Callbacks<Model, decltype(step), decltype(theta)> callbacks(context, model, step, theta, ranks,
                                                              data.num_samples());
  const Data validation = to_device<Data>(context.inputs.validation);
  check_outputs(step.aggregation(), o);
  const auto suspects =
      track_suspects<Space>(o, model, loss, theta, data, my_rows, callbacks.list);
  const auto fitted = gradsum::fit(step, theta, data,
                                   validation.num_samples() > 0 ? &validation : nullptr, loop,
                                   callbacks.list);
  report_stop(context.say, fitted);
  if (!fitted.stopped_by.empty()) callbacks.restore_best(context.say, theta);
  if (fitted.reason == gradsum::StopReason::gradient_norm)
    report_critical_point(context.say, step, theta, data, my_rows);
  if (o.noise_parts > 0)
    report_noise(context.say, fitted, o.batch > 0 ? double(o.batch) : double(data.num_samples()));
  if (o.watch_workers) callbacks.watch.summary();
  if (step.skipped_steps() > 0)
    context.say("skipped %lld steps with a non-finite loss or gradient\n",
                static_cast<long long>(step.skipped_steps()));
  report_final<Space>(context, step, model, loss, theta, data, validation);
  report_suspects<Loss>(context, suspects.get(), step.aggregation());
  save_params(o, step, theta, data_notes(context));
  return 0;
}

}  // namespace gradsum_train
