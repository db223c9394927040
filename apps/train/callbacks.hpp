// SPDX-License-Identifier: Apache-2.0
#pragma once

// The callbacks gradsum-train hands to fit(): progress, --diagnostics,
// --watch-workers, --log, --early-stop with the best parameters, and
// --checkpoint, in an order a resumed run repeats (checkpoints hold the
// callbacks' states in that order).

#include "context.hpp"
#include "watch.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <type_traits>

namespace gradsum_train {

/// --diagnostics: after every epoch, once fit() has evaluated the training
/// objective (its gradient is in step.gradient()), each MLP layer's norms
/// and the health warnings.
template <class Model, class Theta, class Step>
class Diagnostics : public gradsum::Callback {
 public:
  Diagnostics(const Printer& say, const Model& model, const Theta& theta, Step& step)
      : say_(say), model_(model), theta_(theta), step_(step) {}
  void on_epoch(gradsum::FitState&) override {
    if constexpr (std::is_same<Model, gradsum::MLP>::value) {
      const auto report = gradsum::gradient_health(model_, theta_, step_.gradient());
      for (const auto& n : report.layers)
        say_("  layer %d: |g| = %.3e  |theta| = %.3e  |g|/|theta| = %.3e\n", n.layer,
             n.gradient_norm, n.parameter_norm, n.ratio);
      for (const auto& w : report.warnings) say_("  warning: %s\n", w.c_str());
      for (const auto& g : gradsum::symmetric_units(model_, theta_))
        say_("  warning: layer %d: %zu hidden units have identical incoming weights (symmetric "
             "start? use a random --init)\n",
             g.layer, g.units.size());
      std::fflush(stdout);
    }
  }

 private:
  const Printer& say_;
  const Model& model_;
  const Theta& theta_;
  Step& step_;
};

/// The callbacks the flags ask for, in `list`; built in place, as the list
/// points at the members.
template <class Model, class Step, class Theta>
struct Callbacks {
  Callbacks(const Context& context, const Model& model, Step& step, Theta& theta, int ranks,
            std::int64_t rows)
      : progress(context.options.progress == "on" ? gradsum::ProgressMode::bar
                                                  : gradsum::ProgressMode::automatic),
        diagnostics(context.say, model, theta, step),
        watch(context.say, context.options, ranks, rows),
        best(theta),
        checkpoints(context.options.checkpoint, context.options.checkpoint_every, step, theta,
                    context.inputs.scaler) {
    const Options& o = context.options;
    if (o.progress != "off") list.add(progress);
    if (o.diagnostics) list.add(diagnostics);
    if (o.watch_workers) list.add(watch);
    if (!o.log.empty()) list.add(*(log = std::make_unique<gradsum::CsvLog>(o.log, !o.resume.empty())));
    if (o.early_stop > 0) {
      list.add(*(early = std::make_unique<gradsum::EarlyStopping>(o.early_stop)));
      list.add(best);
    }
    checkpoints.set_class_names(context.inputs.class_names);
    if (!o.checkpoint.empty()) list.add(checkpoints);
  }
  Callbacks(const Callbacks&) = delete;
  Callbacks& operator=(const Callbacks&) = delete;

  /// After --early-stop ended training: back to the best parameters seen.
  void restore_best(const Printer& say, Theta& theta) {
    if (!best.has_best()) return;
    best.restore(theta);
    say("restored the parameters after epoch %lld\n", static_cast<long long>(best.best_epoch()));
  }

  gradsum::CallbackList list;
  gradsum::Progress progress;
  Diagnostics<Model, Theta, Step> diagnostics;
  WorkerWatch watch;
  std::unique_ptr<gradsum::CsvLog> log;
  std::unique_ptr<gradsum::EarlyStopping> early;
  gradsum::BestParameters<Theta> best;
  gradsum::Checkpointer<Step, Theta> checkpoints;
};

}  // namespace gradsum_train
