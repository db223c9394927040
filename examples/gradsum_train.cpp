// SPDX-License-Identifier: Apache-2.0
// gradsum-train: trains a linear, logistic or softmax model on a CSV file.
// Exit status: 0 on success, 1 on an error in the data or the run, 2 on a
// bad command line.

#include <gradsum/gradsum.hpp>

#include "train_options.hpp"
#include "world_aggregation.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {

using gradsum_train::Options;

// With MPI every rank reads the whole file and takes its contiguous part
// of each mini-batch (global sampling), so the run follows the
// single-process run whatever the number of ranks.
using gradsum_examples::Aggregation;
using gradsum_examples::make_aggregation;

// Only rank 0 prints.
bool printer = true;

// The feature scaling applied to the data (empty without --standardize),
// saved with checkpoints.
gradsum::StandardScaler scaler;

// The rows held out for validation (--validation F), scaled like the rest.
gradsum::Table validation_table;

void say(const char* format, ...) __attribute__((format(printf, 1, 2)));
void say(const char* format, ...) {
  if (!printer) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

void write_params(const std::string& path, const std::vector<double>& theta) {
  // Written beside the target and renamed over it: an error never leaves a
  // half-written file in place of a good one.
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    if (!out) gradsum::detail::fail("--save-params: cannot write '", partial, "'");
    out.precision(17);
    for (double v : theta) out << v << '\n';
    out.flush();
    if (!out) gradsum::detail::fail("--save-params: writing '", partial, "' failed");
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    gradsum::detail::fail("--save-params: cannot rename '", partial, "' to '", path, "'");
  }
}

template <class View>
std::vector<double> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

template <class Space, class Model, class Loss, class Optimizer>
int train(const Options& o, const gradsum::Table& table, const Model& model, const Loss& loss,
          const Optimizer& optimizer, const Aggregation& aggregation) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const Data data = Data::from_host(std::int64_t(table.num_rows),
                                    int(table.num_features), table.features,
                                    table.targets);
  const Space space;
  const gradsum::Objective objective{
      o.l2, true, o.skip_nonfinite ? gradsum::NonFinite::skip : gradsum::NonFinite::throw_error};
  auto step = gradsum::make_step<double>(space, model, loss, optimizer, objective,
                                         gradsum::Analytic{}, gradsum::Sum{}, aggregation);
  const int rank = aggregation.rank(), ranks = aggregation.size();
  const auto my_rows = gradsum::partition(data.num_samples(), ranks, rank);
  auto theta = step.make_parameters();

  if (o.print_gradient) {
    const auto r = step.evaluate(theta, data, my_rows);
    say("%.17g\n", r.loss);
    for (double g : host_values(step.gradient())) say("%.17g\n", g);
    return 0;
  }

  say("gradsum-train: %s model, %s loss, %s optimizer, %zu samples x %zu features, "
      "%d parameters, space %s, %d rank%s, %s\n",
      model.name(), loss.name(), o.optimizer.c_str(), table.num_rows, table.num_features,
      step.num_parameters(), gradsum::space_name<Space>().c_str(), ranks,
      ranks == 1 ? "" : "s",
      o.batch == 0 ? "full batch" : ("batch " + std::to_string(o.batch)).c_str());
  // The loop is gradsum::fit: the seeded order of epoch e is the same on
  // every rank, and a resumed run continues the uninterrupted trajectory.
  gradsum::FitOptions fit_options;
  fit_options.epochs = o.epochs;
  fit_options.batch = o.batch;
  fit_options.accumulate = o.accumulate;
  fit_options.seed = o.seed;
  fit_options.stopping = gradsum::StoppingRules{o.max_steps, o.grad_tol, o.loss_tol};
  if (!o.resume.empty()) {
    fit_options.start = gradsum::load_checkpoint(o.resume, step, theta);
    if (fit_options.start.seed != o.seed)
      gradsum::detail::fail("--resume: '", o.resume, "' was written with --seed ",
                            fit_options.start.seed, ", this run has --seed ", o.seed);
    say("resumed from '%s' after epoch %lld, step %lld\n", o.resume.c_str(),
        static_cast<long long>(fit_options.start.epoch),
        static_cast<long long>(fit_options.start.step));
  }
  gradsum::CallbackList callbacks;
  gradsum::Progress progress(o.progress == "on" ? gradsum::ProgressMode::bar
                                                : gradsum::ProgressMode::automatic);
  if (o.progress != "off") callbacks.add(progress);
  std::unique_ptr<gradsum::CsvLog> log;
  if (!o.log.empty()) callbacks.add(*(log = std::make_unique<gradsum::CsvLog>(o.log, !o.resume.empty())));
  std::unique_ptr<gradsum::EarlyStopping> early;
  gradsum::BestParameters<decltype(theta)> best(theta);
  if (o.early_stop > 0) {
    callbacks.add(*(early = std::make_unique<gradsum::EarlyStopping>(o.early_stop)));
    callbacks.add(best);
  }
  gradsum::Checkpointer<decltype(step), decltype(theta)> checkpoints(
      o.checkpoint, o.checkpoint_every, step, theta, scaler);
  if (!o.checkpoint.empty()) callbacks.add(checkpoints);
  Data validation;
  if (validation_table.num_rows > 0)
    validation = Data::from_host(std::int64_t(validation_table.num_rows),
                                 int(validation_table.num_features), validation_table.features,
                                 validation_table.targets);
  const auto fitted = gradsum::fit(step, theta, data,
                                   validation_table.num_rows > 0 ? &validation : nullptr,
                                   fit_options, callbacks);
  if (fitted.reason != gradsum::StopReason::none)
    say("stopped after %lld steps: %s\n", static_cast<long long>(fitted.position.step),
        gradsum::describe(fitted.reason));
  if (!fitted.stopped_by.empty()) {
    say("stopped after %lld steps: %s\n", static_cast<long long>(fitted.position.step),
        fitted.stopped_by.c_str());
    if (best.has_best()) {
      best.restore(theta);
      say("restored the parameters after epoch %lld\n",
          static_cast<long long>(best.best_epoch()));
    }
  }
  if (step.skipped_steps() > 0)
    say("skipped %lld steps with a non-finite loss or gradient\n",
        static_cast<long long>(step.skipped_steps()));
  const auto r = step.evaluate(theta, data, my_rows);
  say("final loss=%.10g grad_norm=%.10g", r.loss, r.gradient_norm);
  if constexpr (gradsum::is_classifier_loss_v<Loss>) {
    // Every rank holds the same parameters and data: rank 0 counts.
    const auto correct = gradsum::count_correct(space, model, loss, theta, data);
    say(" accuracy=%.6g", double(correct) / double(data.num_samples()));
  }
  say("\n");
  if (validation_table.num_rows > 0) {
    const auto v = step.evaluate(theta, validation,
                                 gradsum::partition(validation.num_samples(), ranks, rank));
    say("validation loss=%.10g", v.loss);
    if constexpr (gradsum::is_classifier_loss_v<Loss>) {
      const auto correct = gradsum::count_correct(space, model, loss, theta, validation);
      say(" accuracy=%.6g", double(correct) / double(validation.num_samples()));
    }
    say("\n");
  }
  if (!o.save_params.empty() && rank == 0) write_params(o.save_params, host_values(theta));
  return 0;
}

// The optimizer the flags ask for; first-order methods follow --schedule.
template <class Space, class Model, class Loss>
int with_optimizer(const Options& o, const gradsum::Table& table, const Model& model,
                   const Loss& loss, const Aggregation& aggregation) {
  auto schedule = gradsum_train::parse_schedule(o.schedule).with_warmup(o.warmup);
  auto first_order = [&](auto optimizer) {
    if (o.lr_given) optimizer.lr = o.lr;
    return train<Space>(o, table, model, loss,
                        gradsum::Scheduled<decltype(optimizer)>(optimizer, schedule), aggregation);
  };
  const std::string& name = o.optimizer;
  if (name == "sgd") return first_order(gradsum::SGD{o.lr});
  if (name == "momentum") return first_order(gradsum::Momentum{0.01, o.momentum});
  if (name == "nesterov") return first_order(gradsum::Nesterov{0.01, o.momentum});
  if (name == "adagrad") {
    gradsum::AdaGrad a;
    if (o.eps > 0) a.eps = o.eps;
    return first_order(a);
  }
  if (name == "rmsprop") {
    gradsum::RMSProp a;
    if (o.eps > 0) a.eps = o.eps;
    return first_order(a);
  }
  if (name == "adam" || name == "adamw") {
    auto configure = [&](auto a) {
      a.beta1 = o.beta1;
      a.beta2 = o.beta2;
      if (o.eps > 0) a.eps = o.eps;
      if (o.weight_decay >= 0) a.weight_decay = o.weight_decay;
      return first_order(a);
    };
    return name == "adam" ? configure(gradsum::Adam{}) : configure(gradsum::AdamW{});
  }
  if (name == "newton") {
    gradsum::Newton newton;
    if (o.lr_given) newton.lr = o.lr;
    return train<Space>(o, table, model, loss, newton, aggregation);
  }
  if (name == "steepest") {
    gradsum::SteepestDescent sd;
    if (o.lr_given) sd.initial_step = o.lr;
    if (o.line_search == "exact") sd.line_search = gradsum::SteepestDescent::LineSearch::exact;
    else if (!o.line_search.empty() && o.line_search != "armijo")
      gradsum::detail::fail("--line-search: steepest takes armijo or exact, got '", o.line_search, "'");
    return train<Space>(o, table, model, loss, sd, aggregation);
  }
  gradsum::LBFGS lbfgs;
  lbfgs.m = o.history;
  if (o.line_search == "armijo") lbfgs.line_search = gradsum::LBFGS::LineSearch::armijo;
  else if (!o.line_search.empty() && o.line_search != "wolfe")
    gradsum::detail::fail("--line-search: lbfgs takes wolfe or armijo, got '", o.line_search, "'");
  return train<Space>(o, table, model, loss, lbfgs, aggregation);
}

template <class Space>
int run_on(const Options& o, const gradsum::Table& table, const Aggregation& aggregation) {
  const int d = int(table.num_features);
  if (o.model == "linear")
    return with_optimizer<Space>(o, table, gradsum::Linear(d), gradsum::SquaredError{},
                                 aggregation);
  if (o.model == "logistic")
    return with_optimizer<Space>(o, table, gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                 aggregation);
  double classes = 0;
  for (double y : table.targets) classes = y + 1 > classes ? y + 1 : classes;
  if (!(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::detail::fail(table.source, ": softmax needs integer class labels 0 … C-1 with ",
                          "2 <= C <= ", gradsum::max_outputs, "; the largest label is ",
                          classes - 1);
  return with_optimizer<Space>(o, table, gradsum::Softmax(d, int(classes)),
                               gradsum::SoftmaxCrossEntropy{}, aggregation);
}

template <class... Spaces>
int dispatch(const Options& o, const gradsum::Table& table, const Aggregation& aggregation,
             std::tuple<Spaces...>*) {
  const std::string wanted =
      o.space.empty() ? gradsum::space_name<Kokkos::DefaultExecutionSpace>() : o.space;
  int status = -1;
  ((status < 0 && gradsum::space_name<Spaces>() == wanted ? status = run_on<Spaces>(o, table, aggregation)
                                                          : 0),
   ...);
  if (status < 0)
    gradsum::detail::fail("--space: '", wanted, "' is not enabled in this build; choose one of ",
                          gradsum::enabled_space_names());
  return status;
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  try {
    options = gradsum_train::parse(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(gradsum_train::usage(), stdout);
    return 0;
  }
  gradsum::Environment environment(argc, argv);
  printer = environment.rank() == 0;
  try {
    Aggregation aggregation = make_aggregation();
    // Reading can fail on one rank only (a file missing on one node):
    // every rank learns of it before the first collective of training.
    gradsum::Table table;
    std::string error;
    try {
      gradsum::CsvOptions csv;
      csv.target_column = options.target_column;
      table = gradsum::read_csv(options.data, csv);
      if (options.validation > 0)  // a seeded split, the same on every rank
        std::tie(table, validation_table) =
            gradsum::train_test_split(table, options.validation, options.seed);
      // A resumed run scales with the checkpoint's scaler, so the model sees
      // the data it was trained on.
      if (!options.resume.empty()) scaler = gradsum::read_checkpoint(options.resume).scaler;
      if (options.standardize && scaler.mean.empty()) scaler = gradsum::StandardScaler::fit(table);
      if (!scaler.mean.empty()) scaler.transform(table);
      if (!scaler.mean.empty() && validation_table.num_rows > 0) scaler.transform(validation_table);
    } catch (const gradsum::Error& e) {
      error = e.what();
    }
    error = aggregation.first_error(error);
    if (!error.empty()) throw gradsum::Error(error);
    return dispatch(options, table, aggregation,
                    static_cast<gradsum::ExecutionSpaces*>(nullptr));
  } catch (const std::exception& e) {
    // Errors from the step reach every rank alike; rank 0 reports them.
    if (printer) std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 1;
  }
}
