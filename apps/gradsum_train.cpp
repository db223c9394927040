// SPDX-License-Identifier: Apache-2.0
// gradsum-train: trains a linear, logistic, softmax or MLP model on a CSV file.
// Exit status: 0 on success, 1 on an error in the data or the run, 2 on a
// bad command line.

#include <gradsum/gradsum.hpp>

#include "plan_mode.hpp"
#include "train_options.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <functional>
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
//
// --aggregate and --reduce are run-time choices inside one policy each
// (RobustAllreduce / VirtualWorkers, RuntimeReduction), so they add no
// template instantiations: the workers of a robust rule are the ranks
// when there are several, else --workers parts of each batch.
#if GRADSUM_ENABLE_MPI
using Aggregation = gradsum::RobustAllreduce;
Aggregation make_aggregation(const gradsum::RobustRule& rule) {
  int ranks = 1;
  gradsum::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
  return Aggregation(MPI_COMM_WORLD, ranks > 1 ? rule : gradsum::RobustRule{});
}
// Every rank reads the file itself: ranks that found other class names
// (files that differ between nodes) would number the classes differently.
std::string class_names_disagree(const std::vector<std::string>& names, const std::string& data) {
  std::string joined;
  for (const auto& name : names) joined += name + '\n';  // names hold no line break
  const unsigned long long h = std::hash<std::string>{}(joined);
  unsigned long long mine[2] = {h, ~h}, most[2] = {0, 0};
  gradsum::mpi::check(MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD),
                      "MPI_Allreduce");
  if (most[0] == h && most[1] == ~h) return {};
  std::string shown;  // the first 10 names
  for (std::size_t k = 0; k < names.size() && k < 10; ++k) shown += (k ? ", " : "") + names[k];
  if (names.size() > 10) shown += ", …";
  return gradsum::concat("--data: the ranks read different class names from '", data,
                         "' (this rank: ", names.empty() ? "none, the targets are numbers" : shown,
                         "); every rank must read the same file");
}
#else
using Aggregation = gradsum::Local;
Aggregation make_aggregation(const gradsum::RobustRule&) { return Aggregation{}; }
std::string class_names_disagree(const std::vector<std::string>&, const std::string&) { return {}; }
#endif

bool is_regression(const Options& o) {
  return o.model == "linear" || (o.model == "mlp" && o.loss == "squared");
}
bool is_binary(const Options& o) {
  return o.model == "logistic" || (o.model == "mlp" && o.loss == "logistic");
}

// The targets the loss accepts, checked as the file is read so that a bad
// one is named by file:line:column. A softmax head has as many classes as
// the labels say, up to max_outputs.
gradsum::TargetRule target_rule(const Options& o) {
  if (is_regression(o)) return {};
  if (is_binary(o))
    return {[](double y) { return gradsum::BinaryCrossEntropy::is_valid_target(y, 1); },
            "a target in [0, 1] for binary_cross_entropy"};
  return {[](double y) {
            return gradsum::SoftmaxCrossEntropy::is_valid_target(y, gradsum::max_outputs);
          },
          gradsum::concat("an integer class label in [0, ", gradsum::max_outputs,
                          ") for softmax_cross_entropy")};
}

// Class names stand for labels: a regression target, or the two labels of
// logistic regression, cannot be names of other counts.
void check_class_names(const Options& o, const std::vector<std::string>& names) {
  if (names.empty()) return;
  const bool regression = is_regression(o);
  const bool binary = is_binary(o);
  if (regression)
    gradsum::fail("--data: '", o.data, "' holds class names in its target column ('",
                  names[0], "' …), which a regression (--model ", o.model,
                  o.model == "mlp" ? " --loss squared" : "", ") cannot fit; use a classifier");
  if (binary && names.size() != 2)
    gradsum::fail("--data: '", o.data, "' holds ", names.size(), " class names in its target "
                  "column; logistic regression takes 2 (use --model softmax for more)");
}

gradsum::RobustRule robust_rule(const Options& o) {
  if (o.aggregate == "median") return gradsum::CoordinateMedian{};
  if (o.aggregate == "trimmed") return gradsum::TrimmedMean{o.trimmed_k};
  if (o.aggregate == "clip") return gradsum::NormClip{o.clip_c};
  return {};
}

// printf on rank 0; the other ranks stay silent.
struct Printer {
  bool on = true;
  void operator()(const char* format, ...) const __attribute__((format(printf, 2, 3)));
};

void Printer::operator()(const char* format, ...) const {
  if (!on) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

// One value per line, 17 significant digits: read back, the same doubles.
void write_params(const std::string& path, const std::vector<double>& theta) {
  gradsum::OutputFile out(path, "--save-params");
  for (double v : theta) out.print("%.17g\n", v);
  out.commit();
}

// The rows to train on and, with --test-fraction and --validation, the rows
// held out, all scaled by `scaler` (empty without --standardize), which the
// checkpoints save.
struct Inputs {
  gradsum::Table train;
  gradsum::Table test;
  gradsum::Table validation;
  gradsum::StandardScaler scaler;
  std::vector<std::string> class_names;  // of a target column of names, else empty
  std::vector<std::int64_t> file_rows;   // --suspects: each training row's 1-based data row
};

// What every rank must share before its first collective: the flags, and
// the data as read, split and scaled (a file that differs between nodes, a
// split or a scaling on one rank only would train a wrong model silently).
gradsum::Signature run_signature(const Options& o, const Inputs& in) {
  gradsum::Signature s = gradsum_train::agreed_flags(o);
  const std::pair<std::string, const gradsum::Table*> tables[] = {
      {"training rows", &in.train}, {"validation rows", &in.validation}, {"test rows", &in.test}};
  for (const auto& [name, table] : tables) {
    s.add(name, std::int64_t(table->num_rows));
    s.add_hash(name + " (features)", table->features.data(), table->features.size());
    s.add_hash(name + " (targets)", table->targets.data(), table->targets.size());
  }
  s.add_hash("feature scaling (means)", in.scaler.mean.data(), in.scaler.mean.size());
  s.add_hash("feature scaling (scales)", in.scaler.scale.data(), in.scaler.scale.size());
  return s;
}

// What every stage of a run reads, handed down instead of kept in globals.
struct Context {
  Options options;
  Inputs inputs;
  Printer say;
  gradsum::ThreadChoice threads;  // how Environment picked the host threads
};

// The banner's "N threads (why)": the space's own count, and who chose it.
template <class Space>
std::string describe_threads(const gradsum::ThreadChoice& c) {
  // A device's concurrency counts its lanes; the choice is the host's threads.
  int n = 0;
  constexpr bool host = std::is_same<typename Space::memory_space, Kokkos::HostSpace>::value;
  if constexpr (host) n = Space().concurrency();
  else n = Kokkos::DefaultHostExecutionSpace().concurrency();
  std::string out = gradsum::concat(n, host ? "" : " host", n == 1 ? " thread" : " threads");
  if (c.threads > 0)
    out += gradsum::concat(" (", c.cores, c.cores == 1 ? " core / " : " cores / ", c.local_ranks,
                           c.local_ranks == 1 ? " rank" : " ranks", " on this node)");
  else
    out += gradsum::concat(" (set by ", c.origin, ")");
  return out;
}

template <class View>
std::vector<double> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

// --diagnostics: after every epoch, once fit() has evaluated the training
// objective (its gradient is in step.gradient()), each MLP layer's norms and
// the health warnings.
template <class Model, class Theta, class StepType>
class Diagnostics : public gradsum::Callback {
 public:
  Diagnostics(const Printer& say, const Model& model, const Theta& theta, StepType& step)
      : say_(say), model_(model), theta_(theta), step_(step) {}
  void on_epoch(gradsum::FitState&) override {
    if constexpr (std::is_same<Model, gradsum::MLP>::value) {
      const auto report = gradsum::diagnostics::gradient_health(model_, theta_, step_.gradient());
      for (const auto& n : report.layers)
        say_("  layer %d: |g| = %.3e  |theta| = %.3e  |g|/|theta| = %.3e\n", n.layer,
             n.gradient_norm, n.parameter_norm, n.ratio);
      for (const auto& w : report.warnings) say_("  warning: %s\n", w.c_str());
      for (const auto& g : gradsum::diagnostics::symmetric_units(model_, theta_))
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
  StepType& step_;
};

// --suspects: the training rows in the file's numbering. The splits keep
// rows in order but drop some; replaying them (the same row count and
// seeds) on a table holding each row's number says which rows remain.
std::vector<std::int64_t> training_file_rows(std::size_t rows, const Options& o) {
  gradsum::Table numbers;
  numbers.num_rows = rows;
  numbers.num_features = 1;
  for (std::size_t i = 0; i < rows; ++i) numbers.features.push_back(double(i + 1));
  numbers.targets.assign(rows, 0.0);
  if (o.test_fraction > 0)
    numbers = gradsum::train_test_split(numbers, o.test_fraction, o.seed).first;
  if (o.validation > 0)
    numbers = gradsum::train_test_split(numbers, o.validation, o.seed + 1).first;
  return std::vector<std::int64_t>(numbers.features.begin(), numbers.features.end());
}

// --suspects K: the margin of every training row of this rank's part,
// recorded after every epoch (a fit() callback).
template <class Space, class Model, class Loss, class Theta, class Data>
std::unique_ptr<gradsum::diagnostics::MarginHistory<Space, Model, Loss, Theta, Data>>
track_suspects(const Context& context, const Space& space, const Model& model, const Loss& loss,
               const Theta& theta, const Data& data, gradsum::RowRange rows,
               gradsum::CallbackList& callbacks) {
  const Options& o = context.options;
  if (o.suspects == 0) return nullptr;
  if (o.suspects > data.num_samples())
    gradsum::fail_agreed("--suspects: asks for ", o.suspects, " rows, but training holds ",
                  data.num_samples(), "; ask for at most ", data.num_samples());
  auto history = std::make_unique<gradsum::diagnostics::MarginHistory<Space, Model, Loss, Theta, Data>>(
      space, model, loss, theta, data, rows);
  callbacks.add(*history);
  return history;
}

// A target or prediction as the file spells it: a class name, else a number.
std::string suspect_value(const Context& context, double v, bool classifier) {
  const auto& names = context.inputs.class_names;
  if (classifier && v >= 0 && v < double(names.size())) return names[std::size_t(v)];
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

// Prints the K suspects (rank 0) and writes --suspects-out: collective, the
// ranks' top K merged.
template <class Loss, class History, class OnRank0>
void report_suspects(const Context& context, const History* history, const OnRank0& on_rank0) {
  if (!history) return;
  const Options& o = context.options;
#if GRADSUM_ENABLE_MPI
  const auto top = gradsum::mpi::suspect_rows(gradsum::mpi::Communicator(MPI_COMM_WORLD),
                                              *history, o.suspects);
#else
  const auto top = gradsum::diagnostics::suspect_rows(*history, o.suspects);
#endif
  constexpr bool classifier = gradsum::is_classifier_loss_v<Loss>;
  std::vector<std::string> lines;
  for (const auto& s : top) {
    const auto row = context.inputs.file_rows.at(std::size_t(s.row));
    const std::string target = suspect_value(context, s.target, classifier),
                      predicted = suspect_value(context, s.predicted, classifier);
    context.say("suspect row=%lld target=%s predicted=%s score=%.6g\n",
                static_cast<long long>(row), target.c_str(), predicted.c_str(), s.score);
    lines.push_back(gradsum::concat(row, ',', csv_field(target), ',', csv_field(predicted), ','));
    char score[32];
    std::snprintf(score, sizeof score, "%.17g", s.score);
    lines.back() += score;
  }
  if (o.suspects_out.empty()) return;
  on_rank0([&] {
    gradsum::OutputFile out(o.suspects_out, "--suspects-out");
    out.print("row,target,predicted,score\n");
    for (const auto& line : lines) out.print("%s\n", line.c_str());
    out.commit();
  });
}

// --watch-workers: the workers compared (see --help), their number, and
// the rows each holds when that is fixed (full batch, stored order).
int watched_parts(const Options& o, int ranks) {
  if (o.accumulate > 1) return o.accumulate;
  if (o.noise_parts > 0) return o.noise_parts;
  return ranks > 1 ? 1 : o.workers;
}

// Prints every outlier the step names and, at the end, how often each
// worker was named (the step's ratios: train/detail/worker_watch.hpp).
class WorkerWatch : public gradsum::Callback {
 public:
  WorkerWatch(const Printer& say, const Options& o, int ranks, std::int64_t rows)
      : say_(say), parts_(watched_parts(o, ranks)), ranks_(ranks), rows_(rows),
        fixed_rows_(o.batch == 0 && o.accumulate == 1),
        workers_(std::size_t(parts_ * ranks)) {}
  void on_step(gradsum::FitState& s) override {
    const auto& r = s.result;
    for (std::size_t w = 0; w < r.worker_ratios.size() && w < workers_.size(); ++w) {
      const double ratio = r.worker_ratios[w];
      if (std::isnan(ratio)) continue;
      Tally& t = workers_[w];
      ++t.steps;
      t.max_ratio = std::max(t.max_ratio, ratio);
    }
    for (int w : r.outliers) {
      ++workers_[std::size_t(w)].named;
      say_("outlier worker=%d step=%lld ratio=%.3g\n", w,
           static_cast<long long>(s.position.step), r.worker_ratios[std::size_t(w)]);
    }
  }
  void summary() const {
    say_("workers watched: %zu (%s)\n", workers_.size(),
         ranks_ > 1 && parts_ == 1 ? "the ranks" : "parts of every rank's batch");
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      const Tally& t = workers_[w];
      say_("worker %zu: named in %lld of %lld steps, max ratio %.3g", w,
           static_cast<long long>(t.named), static_cast<long long>(t.steps), t.max_ratio);
      if (fixed_rows_) {
        const int rank = int(w) / parts_, part = int(w) % parts_;
        const auto rows =
            gradsum::partition(gradsum::partition(rows_, ranks_, rank), parts_, part);
        say_(", training rows [%lld, %lld)", static_cast<long long>(rows.begin),
             static_cast<long long>(rows.end));
      }
      say_("\n");
    }
  }

 private:
  struct Tally {
    std::int64_t steps = 0, named = 0;
    double max_ratio = 0;
  };
  const Printer& say_;
  int parts_, ranks_;
  std::int64_t rows_;
  bool fixed_rows_;
  std::vector<Tally> workers_;
};

template <class Space, class Model, class Loss, class Optimizer>
int train(const Context& context, const Model& model, const Loss& loss,
          const Optimizer& optimizer, const Aggregation& aggregation) {
  const Options& o = context.options;
  const Inputs& inputs = context.inputs;
  const Printer& say = context.say;
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const gradsum::Table& table = inputs.train;
  const Data data = Data::from_host(std::int64_t(table.num_rows),
                                    int(table.num_features), table.features,
                                    table.targets);
  const Space space;
  const gradsum::Objective objective{
      o.l2, true, o.skip_nonfinite ? gradsum::NonFinite::skip : gradsum::NonFinite::throw_error};
  const int rank = aggregation.rank(), ranks = aggregation.size();
  // One rank: a robust rule combines --workers parts of each batch.
  const gradsum::VirtualWorkers<> gradient{ranks > 1 ? gradsum::RobustRule{} : robust_rule(o),
                                           o.workers};
  auto step = gradsum::make_step<double>(space, model, loss, optimizer, objective, gradient,
                                         gradsum::RuntimeReduction::parse(o.reduce), aggregation);
  if (o.noise_parts > 0) {
    if (ranks * o.noise_parts < 2)
      gradsum::fail_agreed("--noise-scale 1 on one rank measures a single worker; the noise "
                    "scale compares at least two (use --noise-scale 2 or more)");
    step.measure_workers(o.noise_parts);
  }
  if (o.watch_workers) {
    const int parts = watched_parts(o, ranks);
    if (std::int64_t(parts) * ranks < 3)
      gradsum::fail_agreed("--watch-workers: compares 3 workers or more, this run has ", parts * ranks,
                    " (", ranks, ranks == 1 ? " rank" : " ranks", " x ", parts,
                    "); run on 3 ranks or more, or on one rank with --workers 3 or more");
    step.watch_workers(parts);
  }
  const auto my_rows = gradsum::partition(data.num_samples(), ranks, rank);
  auto theta = step.make_parameters();
  if constexpr (std::is_same<Model, gradsum::MLP>::value)
    gradsum::initialize(model, gradsum::Initializer::parse(o.init).with_seed(o.seed), theta);

  if (o.print_gradient) {
    // With --resume, at the checkpoint's parameters (a trained model's).
    if (!o.resume.empty()) gradsum::load_checkpoint(o.resume, step, theta);
    const auto r = step.evaluate(theta, data, my_rows);
    say("%.17g\n", r.loss);
    for (double g : host_values(step.gradient())) say("%.17g\n", g);
    return 0;
  }

  std::string model_name = model.name();
  if constexpr (std::is_same<Model, gradsum::MLP>::value) {
    model_name += ' ';
    model_name += model.describe();
  }
  // Which path the gradient takes, and for matrix products which gemm;
  // the per-sample path takes blocks of samples on CPU threads where the
  // model's `batched` is set and the reduction adds them as they come.
  std::string path;
  if constexpr (!std::is_same<Model, gradsum::Linear>::value) {
    using StepSpace = typename decltype(step)::execution_space;
    const bool blocks =
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename StepSpace::memory_space>::accessible &&
        model.batched && !gradsum::detail::needs_each_sample(gradsum::RuntimeReduction::parse(o.reduce));
    path = step.layerwise() ? gradsum::concat(", matrix path (gemm ", GRADSUM_GEMM, ")")
           : blocks         ? std::string(", per-sample path in blocks")
                            : std::string(", per-sample path");
  }
  say("gradsum-train: %s model, %s loss, %s optimizer, %zu samples x %zu features, "
      "%d parameters, space %s, %s, %d rank%s, %s%s\n",
      model_name.c_str(), loss.name(), o.optimizer.c_str(), table.num_rows, table.num_features,
      step.num_parameters(), gradsum::space_name<Space>().c_str(),
      describe_threads<Space>(context.threads).c_str(), ranks,
      ranks == 1 ? "" : "s",
      o.batch == 0 ? "full batch" : ("batch " + std::to_string(o.batch)).c_str(), path.c_str());
  if (!inputs.class_names.empty()) {
    say("gradsum-train: classes");
    for (std::size_t k = 0; k < inputs.class_names.size(); ++k)
      say(" %zu=%s", k, inputs.class_names[k].c_str());
    say("\n");
  }
  if (o.reduce != "sum" || o.aggregate != "sum")
    say("gradsum-train: reduce %s, aggregate %s over %d %s\n", o.reduce.c_str(),
        robust_rule(o).name().c_str(), ranks > 1 ? ranks : o.workers,
        ranks > 1 ? "ranks" : "virtual workers");
  // The loop is gradsum::fit: the seeded order of epoch e is the same on
  // every rank, and a resumed run continues the uninterrupted trajectory.
  gradsum::FitOptions fit_options;
  fit_options.epochs = o.epochs;
  fit_options.batch = o.batch;
  fit_options.accumulate = o.accumulate;
  fit_options.seed = o.seed;
  fit_options.stopping = gradsum::StoppingRules{o.max_steps, o.grad_tol, o.loss_tol};
  if (!o.resume.empty()) {
    gradsum::CheckpointData saved;
    fit_options.start = gradsum::load_checkpoint(o.resume, step, theta, &saved);
    fit_options.start_file = o.resume;
    fit_options.loop = std::move(saved.loop);  // early stopping, best parameters, stopping rules
    // Each rank read its own copy of the checkpoint.
    gradsum::on_every_rank(step.aggregation(), [&] {
      if (fit_options.start.seed != o.seed)
        gradsum::fail("--resume: '", o.resume, "' was written with --seed ",
                      fit_options.start.seed, ", this run has --seed ", o.seed);
      if (saved.class_names != inputs.class_names)
        gradsum::fail("--resume: '", o.resume, "' was written for ", saved.class_names.size(),
                      " class names, this run's data has ", inputs.class_names.size(),
                      " other ones (the classes would be numbered differently)");
    });
    say("resumed from '%s' after epoch %lld, step %lld\n", o.resume.c_str(),
        static_cast<long long>(fit_options.start.epoch),
        static_cast<long long>(fit_options.start.step));
  }
  gradsum::CallbackList callbacks;
  gradsum::Progress progress(o.progress == "on" ? gradsum::ProgressMode::bar
                                                : gradsum::ProgressMode::automatic);
  if (o.progress != "off") callbacks.add(progress);
  Diagnostics<Model, decltype(theta), decltype(step)> diagnostics(say, model, theta, step);
  if (o.diagnostics) callbacks.add(diagnostics);
  WorkerWatch watch(say, o, ranks, data.num_samples());
  if (o.watch_workers) callbacks.add(watch);
  std::unique_ptr<gradsum::CsvLog> log;
  if (!o.log.empty()) callbacks.add(*(log = std::make_unique<gradsum::CsvLog>(o.log, !o.resume.empty())));
  std::unique_ptr<gradsum::EarlyStopping> early;
  gradsum::BestParameters<decltype(theta)> best(theta);
  if (o.early_stop > 0) {
    callbacks.add(*(early = std::make_unique<gradsum::EarlyStopping>(o.early_stop)));
    callbacks.add(best);
  }
  gradsum::Checkpointer<decltype(step), decltype(theta)> checkpoints(
      o.checkpoint, o.checkpoint_every, step, theta, inputs.scaler);
  checkpoints.set_class_names(inputs.class_names);
  if (!o.checkpoint.empty()) callbacks.add(checkpoints);
  const gradsum::Table& validation_table = inputs.validation;
  Data validation;
  if (validation_table.num_rows > 0)
    validation = Data::from_host(std::int64_t(validation_table.num_rows),
                                 int(validation_table.num_features), validation_table.features,
                                 validation_table.targets);
  // Rank 0 writes the parameters; a failure there fails every rank alike.
  auto on_rank0 = [&](auto work) {
    gradsum::on_every_rank(step.aggregation(), [&] {
      if (rank == 0) work();
    });
  };
  // A folder that cannot take them fails the run now, not after training.
  if (!o.save_params.empty())
    on_rank0([&] { gradsum::OutputFile::check(o.save_params, "--save-params"); });
  if (!o.suspects_out.empty())
    on_rank0([&] { gradsum::OutputFile::check(o.suspects_out, "--suspects-out"); });
  const auto suspects = track_suspects(context, space, model, loss, theta, data, my_rows, callbacks);
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
  if (fitted.reason == gradsum::StopReason::gradient_norm) {
    // A vanishing gradient marks a critical point: the Hessian's extreme
    // eigenvalues say which kind.
    const auto c = gradsum::diagnostics::curvature(step, theta, data, my_rows);
    const double scale = std::max(std::fabs(c.min_eigenvalue), std::fabs(c.max_eigenvalue));
    say("critical point: %s (Hessian eigenvalues from %.6g to %.6g, %s)\n",
        gradsum::diagnostics::describe(gradsum::diagnostics::classify(c, 1e-8 * std::max(scale, 1.0))),
        c.min_eigenvalue, c.max_eigenvalue,
        c.exact ? "exact" : gradsum::concat("Lanczos, ", c.products, " products").c_str());
  }
  if (o.noise_parts > 0)
    say("mini-batches: loss average %.6g (last batch %.6g, spread over %lld workers %.3g); "
        "gradient noise scale B_noise=%.4g (tr(Sigma)=%.6g, |G|^2=%.6g, averaged over updates)\n",
        fitted.loss_average, fitted.last.loss, static_cast<long long>(fitted.last.workers),
        fitted.last.worker_loss_spread, fitted.noise_scale, fitted.noise_trace,
        fitted.gradient_norm2);
  if (o.noise_parts > 0 && fitted.noise_scale > 0 && std::isfinite(fitted.noise_scale)) {
    const double batch = o.batch > 0 ? double(o.batch) : double(data.num_samples());
    say("advice: batches up to about B_noise=%.4g samples cut the steps almost in proportion "
        "(steps ~ 1 + B_noise / B); this run's batch of %.0f is %s it; size a cluster with "
        "gradsum-train --plan ... --noise-scale %.4g\n",
        fitted.noise_scale, batch, batch < fitted.noise_scale ? "below" : "past",
        fitted.noise_scale);
  }
  if (o.watch_workers) watch.summary();
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
  if (inputs.test.num_rows > 0) {
    const gradsum::Table& t = inputs.test;
    const Data test = Data::from_host(std::int64_t(t.num_rows), int(t.num_features), t.features,
                                      t.targets);
    if constexpr (gradsum::is_classifier_loss_v<Loss>) {
      const auto correct = gradsum::count_correct(space, model, loss, theta, test);
      say(" test_accuracy=%.6g", double(correct) / double(test.num_samples()));
    } else {
      const auto held = step.evaluate(theta, test, gradsum::partition(test.num_samples(), ranks, rank));
      say(" test_loss=%.10g", held.loss);
    }
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
  report_suspects<Loss>(context, suspects.get(), on_rank0);
  if (!o.save_params.empty())
    on_rank0([&] { write_params(o.save_params, host_values(theta)); });
  return 0;
}

// Newton, steepest descent and L-BFGS: methods that evaluate J more than
// once per step (line searches) or need its Hessian. One Step type for the
// three (LineSearchMethod picks at run time), as FirstOrder does for the
// first-order methods.
template <class Space, class Model, class Loss>
int with_line_search(const Context& context, const Model& model, const Loss& loss,
                     const Aggregation& aggregation) {
  const Options& o = context.options;
  auto method = [&]() -> gradsum::LineSearchMethod {
    const std::string& name = o.optimizer;
    if (name == "newton") {
      gradsum::Newton newton;
      if (o.lr_given) newton.lr = o.lr;
      return newton;
    }
    if (name == "steepest") {
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
  };
  return train<Space>(context, model, loss, method(), aggregation);
}

// The optimizer the flags ask for; first-order methods follow --schedule.
template <class Space, class Model, class Loss>
int with_optimizer(const Context& context, const Model& model, const Loss& loss,
                   const Aggregation& aggregation) {
  const Options& o = context.options;
  auto schedule = gradsum_train::parse_schedule(o.schedule).with_warmup(o.warmup);
  // One Step type for the seven first-order methods (FirstOrder picks at
  // run time), instead of seven whole Steps per model.
  auto first_order = [&](auto optimizer) {
    if (o.lr_given) optimizer.lr = o.lr;
    gradsum::Scheduled<gradsum::FirstOrder> scheduled(optimizer, schedule);
    // Without --clip-norm the bound is infinite: one type either way.
    return train<Space>(context, model, loss,
                        gradsum::clip_gradient_norm(scheduled, o.clip_norm > 0 ? o.clip_norm : HUGE_VAL),
                        aggregation);
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
  if constexpr (std::is_same<Model, gradsum::MLP>::value) {
    // parse() accepts only first-order optimizers for an MLP.
    gradsum::fail_agreed("--optimizer: ", name, " does not train --model mlp");
  } else {
    return with_line_search<Space>(context, model, loss, aggregation);
  }
}

// The number of classes C of integer labels 0 … C-1, checked for a softmax head.
// With class names, C is their number, even if the last class has no rows
// left after the held-out splits.
int count_classes(const gradsum::Table& table, const std::vector<std::string>& names) {
  double classes = double(names.size());
  for (double y : table.targets) classes = y + 1 > classes ? y + 1 : classes;
  if (!names.empty() && !(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::fail_agreed(table.source, ": softmax needs 2 to ", gradsum::max_outputs,
                  " classes; the target column names ", names.size());
  if (!(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::fail_agreed(table.source, ": softmax needs integer class labels 0 … C-1 with ",
                  "2 <= C <= ", gradsum::max_outputs, "; the largest label is ",
                  classes - 1);
  return int(classes);
}

// --duplicates: the groups of rows of the whole file (before any held-out
// split reorders them) whose features are identical and whose targets
// differ, one line each, rows numbered as the file's data rows from 1 (the
// header not counted), targets by class name where the file has names.
// Under MPI every rank hashes its contiguous part of the rows and the
// groups are found across the ranks. Collective; rank 0 prints.
void report_duplicates(const Context& context, gradsum::Table& whole) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Rows = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Targets = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::size_t d = whole.num_features;
  auto rows = [&](std::int64_t begin, std::int64_t end) {
    // The file's rows themselves, no copy.
    double* x = whole.features.data() + std::size_t(begin) * d;
    double* y = whole.targets.data() + std::size_t(begin);
    return gradsum::Dataset<double, Kokkos::HostSpace>(Rows(x, std::size_t(end - begin), d),
                                                       Targets(y, std::size_t(end - begin)));
  };
#if GRADSUM_ENABLE_MPI
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const auto part = gradsum::partition(std::int64_t(whole.num_rows), comm.size(), comm.rank());
  const auto report =
      gradsum::mpi::conflicting_duplicates(Space(), comm, rows(part.begin, part.end));
#else
  const auto report = gradsum::diagnostics::conflicting_duplicates(
      Space(), rows(0, std::int64_t(whole.num_rows)));
#endif
  std::size_t listed = 0;
  for (const auto& g : report.conflicting) listed += g.rows.size();
  context.say("gradsum-train: duplicates: %zu group%s of rows with identical features and "
              "different targets (%zu rows); %lld group%s of identical rows with one target "
              "(%lld rows)\n",
              report.conflicting.size(), report.conflicting.size() == 1 ? "" : "s", listed,
              static_cast<long long>(report.consistent_groups),
              report.consistent_groups == 1 ? "" : "s",
              static_cast<long long>(report.consistent_rows));
  const auto& names = context.inputs.class_names;
  for (const auto& g : report.conflicting) {
    std::string line = "duplicate rows=";
    for (std::size_t k = 0; k < g.rows.size(); ++k) line += gradsum::concat(k ? "," : "", g.rows[k] + 1);
    line += " targets=";
    for (std::size_t k = 0; k < g.targets.size(); ++k) {
      const double t = g.targets[k];
      const bool named = t >= 0 && t < double(names.size());
      line += k ? "," : "";
      line += named ? names[std::size_t(t)] : gradsum::concat(t);
    }
    context.say("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

// Reads --data, splits off the test and validation rows (seeded, the same
// on every rank) and scales the features; returns the file's rows before
// any split when --duplicates asks for them.
gradsum::Table read_inputs(const Options& options, Inputs& inputs) {
  gradsum::Table whole;
  gradsum::CsvOptions csv;
  csv.target_column = options.target_column;
  csv.class_names = true;
  csv.target_rule = target_rule(options);
  csv.max_values = options.max_values;
  inputs.train = gradsum::read_csv(options.data, csv);
  inputs.class_names = inputs.train.class_names;
  if (options.suspects > 0) inputs.file_rows = training_file_rows(inputs.train.num_rows, options);
  check_class_names(options, inputs.class_names);
  if (options.duplicates) whole = inputs.train;  // --duplicates: the file's own rows
  // Seeded splits, the same on every rank: the test rows first, then the
  // validation rows out of what is left.
  if (options.test_fraction > 0) {
    auto [train, test] = gradsum::train_test_split(inputs.train, options.test_fraction,
                                                   options.seed);
    inputs.train = std::move(train);
    inputs.test = std::move(test);
  }
  if (options.validation > 0)
    std::tie(inputs.train, inputs.validation) =
        gradsum::train_test_split(inputs.train, options.validation, options.seed + 1);
  // A resumed run scales with the checkpoint's scaler, so the model sees
  // the data it was trained on; held-out rows are scaled by the training
  // rows' statistics.
  gradsum::StandardScaler& scaler = inputs.scaler;
  if (!options.resume.empty()) scaler = gradsum::read_checkpoint(options.resume).scaler;
  if (options.standardize && scaler.mean.empty())
    scaler = gradsum::StandardScaler::fit(inputs.train);
  if (!scaler.mean.empty()) {
    scaler.transform(inputs.train);
    if (inputs.test.num_rows > 0) scaler.transform(inputs.test);
    if (inputs.validation.num_rows > 0) scaler.transform(inputs.validation);
  }
  return whole;
}

template <class Space>
int run_on(const Context& context, const Aggregation& aggregation) {
  const Options& o = context.options;
  const gradsum::Table& table = context.inputs.train;
  const std::vector<std::string>& names = context.inputs.class_names;
  const int d = int(table.num_features);
  // --mlp-path: MLP and softmax regression by matrix products (the
  // layer-wise path) or per sample; auto, the library's choice (for
  // softmax on CPU threads, blocks of samples up to 16 classes).
  auto on_path = [&o](auto model) {
    model.layerwise = o.mlp_path != "per-sample";
    if constexpr (std::is_same<decltype(model), gradsum::Softmax>::value)
      if (o.mlp_path == "matrix") model.batched = false;
    if constexpr (std::is_same<decltype(model), gradsum::MLP>::value)
      if (!model.within_per_sample_limits() && (o.mlp_path == "per-sample" || o.reduce != "sum"))
        gradsum::fail_agreed("--mlp-path ", o.mlp_path, " with --reduce ", o.reduce, ": ",
                      model.per_sample_limits(),
                      "; --mlp-path matrix with --reduce sum has no such limits");
    return model;
  };
  if (o.model == "mlp") {
    const auto activation = gradsum::parse_activation(o.activation);
    if (o.loss == "squared")
      return with_optimizer<Space>(context, on_path(gradsum::MLP(d, o.hidden, 1, activation)),
                                   gradsum::SquaredError{}, aggregation);
    if (o.loss == "logistic")
      return with_optimizer<Space>(context, on_path(gradsum::MLP(d, o.hidden, 1, activation)),
                                   gradsum::BinaryCrossEntropy{}, aggregation);
    return with_optimizer<Space>(
        context, on_path(gradsum::MLP(d, o.hidden, count_classes(table, names), activation)),
        gradsum::SoftmaxCrossEntropy{}, aggregation);
  }
  if (o.model == "linear")
    return with_optimizer<Space>(context, gradsum::Linear(d), gradsum::SquaredError{},
                                 aggregation);
  if (o.model == "logistic")
    return with_optimizer<Space>(context, gradsum::Linear(d), gradsum::BinaryCrossEntropy{},
                                 aggregation);
  return with_optimizer<Space>(context, on_path(gradsum::Softmax(d, count_classes(table, names))),
                               gradsum::SoftmaxCrossEntropy{}, aggregation);
}

template <class... Spaces>
int dispatch(const Context& context, const Aggregation& aggregation, std::tuple<Spaces...>*) {
  const Options& o = context.options;
  const std::string wanted =
      o.space.empty() ? gradsum::space_name<Kokkos::DefaultExecutionSpace>() : o.space;
  int status = -1;
  ((status < 0 && gradsum::space_name<Spaces>() == wanted ? status = run_on<Spaces>(context, aggregation)
                                                          : 0),
   ...);
  if (status < 0)
    gradsum::fail_agreed("--space: '", wanted, "' is not enabled in this build; choose one of ",
                  gradsum::enabled_space_names());
  return status;
}

}  // namespace

int main(int argc, char* argv[]) {
  // --plan answers "should I distribute?" from the cost model alone.
  if (argc > 1 && std::string(argv[1]) == "--plan")
    return gradsum_plan::run(std::vector<std::string>(argv + 2, argv + argc));
  Context context;
  Options& options = context.options;
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
  // Values only the library can judge are still command-line errors.
  try {
    gradsum::parse_activation(options.activation);
    gradsum::Initializer::parse(options.init);
    gradsum::check_thread_flags(argc, argv);
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 2;
  }
  // A file-size limit (ulimit -f) then fails a write with EFBIG, which the
  // writer reports, instead of killing the program mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  // Threads per rank that fill, not oversubscribe, the node's cores.
  gradsum::Environment environment(argc, argv, gradsum::HostThreads::per_rank);
  context.say.on = environment.rank() == 0;
  context.threads = environment.thread_choice();
  // An error on one rank alone ends every rank (see Environment::run).
  return environment.run("gradsum-train", [&] {
    Aggregation aggregation = make_aggregation(robust_rule(options));
    gradsum::Table whole;  // --duplicates: the rows before any split
    // Reading can fail on one rank only (a file missing on one node): every
    // rank learns of it in the first collective, which also compares the
    // ranks' flags and data.
    std::string error;
    try {
      whole = read_inputs(options, context.inputs);
    } catch (const std::exception& e) {
      error = gradsum::describe_exception(e);
    }
    aggregation.agree(run_signature(options, context.inputs), error);
    error = aggregation.first_error(class_names_disagree(context.inputs.class_names, options.data));
    if (!error.empty()) throw gradsum::AgreedError(error);
    if (options.duplicates) {
      report_duplicates(context, whole);
      whole = gradsum::Table{};
    }
    return dispatch(context, aggregation, static_cast<gradsum::ExecutionSpaces*>(nullptr));
  });
}
