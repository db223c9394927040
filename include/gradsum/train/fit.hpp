// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// fit(): epochs of mini-batch updates with a Step, seeded shuffling,
/// global or sharded sampling, gradient accumulation, stopping rules and
/// callbacks.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/train/running_averages.hpp>
#include <gradsum/optimizer/detail/learning_rate.hpp>
#include <gradsum/train/callbacks.hpp>
#include <gradsum/train/checkpoint.hpp>
#include <gradsum/train/step.hpp>
#include <gradsum/train/stopping.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

/// How the ranks share the data.
enum class Sampling {
  /// Every rank holds every sample; mini-batch b of the seeded order is
  /// split over the ranks (see MiniBatchSampler::batch(b, parts, part)), so
  /// the run follows the single-process run for any number of ranks.
  global,
  /// Every rank holds its own samples (a shard) and draws its own
  /// mini-batches of `batch` samples from them, in an order shuffled with
  /// the same seed; an update sums one mini-batch of every rank. Ranks
  /// whose shard has fewer batches contribute empty ones.
  sharded
};

/// What fit() is asked to do.
struct FitOptions {
  /// Epochs in total, counting any done before `start` (a resume): a run
  /// resumed from epoch 5 with epochs = 10 does five more.
  std::int64_t epochs = 1;
  /// Samples per mini-batch (global: over all ranks; sharded: per rank);
  /// 0 means full batch.
  std::int64_t batch = 0;
  /// Gradient accumulation: mini-batches summed locally per update, k >= 1.
  /// The update is that of one batch k times larger, with one aggregation.
  int accumulate = 1;
  /// Seed of the per-epoch shuffle (the same order on every rank).
  std::uint64_t seed = 0;
  Sampling sampling = Sampling::global;
  StoppingRules stopping;
  /// Where to continue from (load_checkpoint's result). Its seed must equal
  /// `seed`: another seed draws other mini-batches, so the run would leave
  /// the checkpoint's trajectory; fit() refuses that resume (see resumes()).
  TrainingPosition start;
  /// The checkpoint file `start` came from, named in fit()'s errors
  /// (optional).
  std::string start_file;
  /// The loop state to continue from (a checkpoint's CheckpointData::loop,
  /// written by a Checkpointer): the stopping rules' state, then each
  /// callback's, in the order of the callbacks; it must come from a run
  /// with the same callbacks. Empty: a fresh loop.
  std::vector<double> loop;
  /// Decay of the moving averages over updates (FitState::loss_average and
  /// noise_scale), in [0, 1).
  double average_decay = 0.9;
  /// Further fields every rank must share (a program adds a hash of its
  /// data and of the feature scaling), compared with these options, the
  /// data's row count and the callbacks in fit()'s first collective.
  Signature agree_on;

  /// Whether the options continue an earlier run: a start past the
  /// beginning, or a loop state to restore.
  bool resumes() const {
    return start.step > 0 || start.epoch > 0 || start.batch > 0 || !loop.empty();
  }

  /// Throws gradsum::Error naming the option that is out of range, or a
  /// resume whose seed differs from the checkpoint's.
  /// The checkpoint `start` came from, as messages name it.
  std::string start_name() const {
    return start_file.empty() ? std::string("in options.start") : "'" + start_file + "'";
  }

  void validate() const {
    if (resumes() && start.seed != seed)
      fail("gradsum::fit: the checkpoint ", start_name(), " (step ", start.step, ", epoch ", start.epoch, ") was written with seed ",
                   start.seed, ", but options.seed is ", seed, "; another seed draws other "
                   "mini-batches, so the run would not continue the checkpoint's trajectory: "
                   "resume with seed = ", start.seed);
    if (!(average_decay >= 0 && average_decay < 1))
      fail("gradsum::fit: average_decay must be in [0, 1), got ", average_decay);
    if (epochs < 0) fail("gradsum::fit: epochs must be >= 0, got ", epochs);
    if (batch < 0) fail("gradsum::fit: batch must be >= 0 (0 = full batch), got ", batch);
    if (accumulate < 1)
      fail("gradsum::fit: accumulate must be >= 1 mini-batch per update, got ", accumulate);
    if (start.step < 0 || start.epoch < 0 || start.batch < 0)
      fail("gradsum::fit: start position must not be negative (step ", start.step,
                   ", epoch ", start.epoch, ", batch ", start.batch, ")");
    stopping.validate();
  }
};

/// What fit() did.
struct FitResult {
  TrainingPosition position;        ///< where training ended
  StopReason reason = StopReason::none;  ///< a stopping rule that ended it, if any
  std::string stopped_by;           ///< a callback's reason for ending it, if any
  StepResult last;                  ///< the last update's result
  StepResult epoch_result;          ///< the training objective after the last epoch
  double loss_average = std::nan("");  ///< moving average of the mini-batch losses at the end
  /// The averaged gradient noise scale and its two parts at the end
  /// (NoiseScale; NaN unless the step measures its workers).
  double noise_scale = std::nan(""), noise_trace = std::nan(""),
         gradient_norm2 = std::nan("");
};

namespace detail {

/// What every rank's fit() must share: the loop's shape and position, the
/// stopping rules, the row counts (with global sampling every rank holds
/// every row), the callbacks, and the caller's own fields.
template <class Data, class Validation>
Signature fit_signature(const FitOptions& o, const Data& data, const Validation* validation,
                        Callback* const* callbacks) {
  Signature sig;
  sig.subject = "run different training loops";
  sig.advice = "every rank must call fit() with the same options, callbacks and data (with "
               "global sampling every rank holds every row)";
  sig.add("epochs", o.epochs);
  sig.add("batch size", o.batch);
  sig.add("accumulated batches", o.accumulate);
  sig.add("seed", std::int64_t(o.seed));
  sig.add("sampling", std::int64_t(o.sampling));
  sig.add("start step", o.start.step);
  sig.add("start epoch", o.start.epoch);
  sig.add("start batch", o.start.batch);
  sig.add("start seed", std::int64_t(o.start.seed));
  sig.add("max steps", o.stopping.max_steps);
  sig.add_bits("gradient tolerance", o.stopping.grad_tol);
  sig.add_bits("loss tolerance", o.stopping.loss_tol);
  sig.add_bits("average decay", o.average_decay);
  sig.add("values of loop state", std::int64_t(o.loop.size()));
  sig.add_hash("loop state", o.loop.data(), o.loop.size());
  const bool global = o.sampling == Sampling::global;
  sig.add("training rows", global ? std::int64_t(data.num_samples()) : -1);
  sig.add("validation rows",
          !validation ? -1 : global ? std::int64_t(validation->num_samples()) : -2);
  // The callbacks in two fields, so that ranks with other callbacks still
  // send signatures of one length and hear which part differs.
  Signature calls;
  for (Callback* const* c = callbacks; *c; ++c) (*c)->sign(calls);
  std::string settings;
  for (const auto& field : calls.fields)
    settings += field.first + '=' + std::to_string(field.second) + '\n';
  sig.add("callback fields", std::int64_t(calls.fields.size()));
  sig.add_hash("callbacks and their settings", settings);
  sig.append(o.agree_on);
  return sig;
}

/// Runs a callback phase on every callback, failing on every rank alike.
template <class Aggregation, class Phase>
void run_phase(Aggregation& aggregation, Callback* const* callbacks, std::size_t n,
               FitState& state, Phase phase) {
  on_every_rank(aggregation, [&] {
    for (std::size_t i = 0; i < n; ++i) phase(*callbacks[i], state);
  });
}

/// Restores the loop state options.loop (see fit()) into the averages, the
/// stopping rules and the callbacks, and returns whether training had
/// ended early. Every value is checked before use (it comes from a file);
/// a message is completed with the checkpoint's name when known.
inline bool restore_loop(const FitOptions& options, MovingAverage& loss_average,
                         NoiseScale& noise, Stopper& stopper, Callback* const* list) {
  const auto& loop = options.loop;
  try {
    // Kind 1 records the batch size after the flag; kind 0 (older) does not.
    const std::size_t head = loop.empty() ? 0 : loop[0] == 0.0 ? 2 : loop[0] == 1.0 ? 3 : 0;
    if (head == 0 || loop.size() < head)
      fail("gradsum::fit: the checkpoint's loop state (", loop.size(),
           " values) was not written by fit()");
    const bool ended_early = restored_flag(loop[1], "gradsum::fit: the saved loop flag 'ended "
                                           "early'");
    // Mid-epoch, the position counts mini-batches of the checkpoint's size.
    if (head == 3 && options.start.batch > 0 && loop[2] != double(options.batch))
      fail("gradsum::fit: the checkpoint stopped after mini-batch ", options.start.batch,
           " of epoch ", options.start.epoch + 1, " of a run with batch size ", loop[2], ", but this run has batch size ",
           options.batch, ": resume mid-epoch with the checkpoint's batch size (a checkpoint "
           "written at the end of an epoch takes any)");
    std::size_t at = head;
    loss_average.restore_state(loop, at);
    noise.restore_state(loop, at);
    stopper.restore_state(loop, at);
    for (Callback* const* c = list; *c; ++c) (*c)->restore_state(loop, at);
    if (at != loop.size())
      fail("gradsum::fit: the checkpoint's loop state holds ", loop.size(),
           " values, this run's stopping rules and callbacks read ", at,
           ": resume with the callbacks the checkpoint was written with (e.g. the same "
           "early-stopping setting)");
    return ended_early;
  } catch (const Error& e) {
    if (options.start_file.empty()) throw;
    throw Error(concat(e.what(), " (checkpoint '", options.start_file, "')"));
  }
}

/// Checks that options.start lies inside an epoch of `batches` mini-batches
/// (at its end at most): past it, the epoch would never complete. The same
/// on every rank (the ranks agreed on the options and batch counts).
inline void check_start(const FitOptions& options, std::int64_t batches) {
  if (options.start.batch > batches)
    fail_agreed("gradsum::fit: the checkpoint ", options.start_name(), " stopped after mini-batch ",
                options.start.batch, " of epoch ", options.start.epoch + 1,
                ", but this run's epochs have ", batches, " mini-batches of ", options.batch,
                " samples: resume with the batch size and data the checkpoint was written with");
}

/// Ranks that would run different loops refuse them here, before the
/// collectives they would no longer match; so do all ranks when one finds
/// its options invalid. Collective.
template <class Aggregation, class Data, class Validation>
void agree_to_fit(Aggregation& aggregation, const FitOptions& options, const Data& data,
                  const Validation* validation, Callback* const* list) {
  std::string invalid;
  try {
    options.validate();
  } catch (const Error& e) {
    invalid = e.what();
  }
  aggregation.agree(fit_signature(options, data, validation, list), invalid);
}

/// fit()'s loop: its position, moving averages, stopping rules and
/// callbacks, one member function per phase. Not copyable: the loop-state
/// closure it hands the callbacks refers to its members.
template <class StepType, class Theta, class Data, class Validation>
class FitLoop {
  using Memory = typename StepType::memory_space;
  using Rows = RowList<Memory>;

 public:
  /// Collective: with sharded sampling the ranks agree on the number of
  /// mini-batches, and a resume restores the loop state on every rank.
  FitLoop(StepType& step, const Theta& theta, const Data& data, const Validation* validation,
          const FitOptions& options, Callback* const* list, std::size_t n_callbacks)
      : step_(step), theta_(theta), data_(data), validation_(validation), options_(options),
        list_(list), n_callbacks_(n_callbacks),
        rank_(step.aggregation().rank()), ranks_(step.aggregation().size()),
        global_(options.sampling == Sampling::global),
        sampler_(data.num_samples(), options.batch, options.seed),
        batches_(count_batches()),
        stopper_(options.stopping),
        loss_average_(options.average_decay),
        noise_(options.average_decay) {
    check_start(options, batches_);
    state_.position = options.start;
    state_.position.seed = options.seed;
    state_.epochs = options.epochs;
    state_.steps_per_epoch = (batches_ + options.accumulate - 1) / options.accumulate;
    state_.first_step = options.start.step;
    state_.rank = rank_;
    state_.ranks = ranks_;
    micro_.parts.reserve(std::size_t(options.accumulate));
    state_.loop_state = [this] { return loop_state(); };
    if (!options.loop.empty())
      on_every_rank(step.aggregation(), [&] {
        stopped_ = ended_early_ =
            restore_loop(options, loss_average_, noise_, stopper_, list_);
      });
    // A run that had already stopped early stays stopped: resuming it does
    // no more updates, as the uninterrupted run did none.
    if (stopped_)
      state_.stop_reason = "training had already stopped when the checkpoint was written";
  }
  FitLoop(const FitLoop&) = delete;
  FitLoop& operator=(const FitLoop&) = delete;

  /// The epochs from the start position to the end or an early stop.
  FitResult run() {
    phase([](Callback& c, FitState& s) { c.on_begin(s); });
    for (std::int64_t epoch = state_.position.epoch; epoch < options_.epochs && !stopped_;
         ++epoch) {
      sampler_.shuffle(epoch);
      for (std::int64_t b = state_.position.batch; b < batches_ && !stopped_;) {
        if (options_.stopping.max_steps > 0 &&
            state_.position.step >= options_.stopping.max_steps) {
          out_.reason = StopReason::max_steps;  // reached before this call (a resume)
          stopped_ = true;
          break;
        }
        b = update(b);
      }
      if (state_.position.batch == batches_) end_epoch(epoch);  // the epoch is complete
    }
    return finish();
  }

 private:
  /// Mini-batches per epoch: the same on every rank (sharded: the most any
  /// rank has, agreed in one small collective).
  std::int64_t count_batches() {
    std::int64_t batches = options_.batch == 0 ? 1 : sampler_.num_batches();
    if (global_) return batches;
    Kokkos::View<std::int64_t*, Memory> most("gradsum::fit::batches", 1);
    Kokkos::deep_copy(most, batches);
    step_.aggregation().aggregate_max(step_.space(), most);
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), most)(0);
  }

  /// This rank's rows of mini-batch b of the epoch.
  Rows micro_batch(std::int64_t b) const {
    if (options_.batch == 0) {  // full batch, stored order
      if (sampler_.num_batches() == 0) return Rows{};  // no rows here (an empty shard)
      const auto all = sampler_.batch(0);
      return global_ ? partition(all, ranks_, rank_) : all;
    }
    if (global_) return sampler_.batch(b, ranks_, rank_);
    if (b < sampler_.num_batches()) return sampler_.batch(b);
    return Rows{};  // this shard ran out: an empty selection
  }

  /// One update over `accumulate` mini-batches from b, then the step
  /// callbacks and the stopping rules; returns the next mini-batch.
  std::int64_t update(std::int64_t b) {
    micro_.parts.clear();
    const std::int64_t end = b + options_.accumulate < batches_ ? b + options_.accumulate
                                                                : batches_;
    for (; b < end; ++b) micro_.parts.push_back(micro_batch(b));
    state_.learning_rate = learning_rate(step_.optimizer());
    state_.result = step_(theta_, data_, micro_);
    if (!state_.result.skipped) loss_average_.add(state_.result.loss);
    noise_.add(state_.result);
    state_.loss_average = loss_average_.value();
    state_.noise_scale = noise_.value();
    ++state_.position.step;
    state_.position.batch = b;
    state_.elapsed_seconds = seconds();
    for (Callback* const* c = list_; *c; ++c) (*c)->on_step(state_);
    out_.reason = stopper_.check(state_.position.step, state_.result);
    stopped_ = out_.reason != StopReason::none || state_.stop;
    ended_early_ = state_.stop || (stopped_ && out_.reason != StopReason::max_steps);
    return b;
  }

  /// After a complete epoch: the objectives, the epoch callbacks, a checkpoint.
  void end_epoch(std::int64_t epoch) {
    state_.position.epoch = epoch + 1;
    state_.position.batch = 0;
    state_.epoch_result = step_.evaluate(
        theta_, data_, global_ ? partition(data_.num_samples(), ranks_, rank_) : data_.all_rows());
    if (validation_) {
      state_.validation = step_.evaluate_loss(
          theta_, *validation_,
          global_ ? partition(validation_->num_samples(), ranks_, rank_) : validation_->all_rows());
      state_.has_validation = true;
    }
    state_.elapsed_seconds = seconds();
    phase([](Callback& c, FitState& s) { c.on_epoch(s); });
    if (state_.stop) stopped_ = ended_early_ = true;
    phase([](Callback& c, FitState& s) { c.on_checkpoint(s); });
  }

  /// The end callbacks, a last checkpoint, and the result.
  FitResult finish() {
    state_.elapsed_seconds = seconds();
    state_.finished = true;
    phase([](Callback& c, FitState& s) { c.on_end(s); });
    phase([](Callback& c, FitState& s) { c.on_checkpoint(s); });
    out_.position = state_.position;
    out_.stopped_by = state_.stop_reason;
    out_.last = state_.result;
    out_.epoch_result = state_.epoch_result;
    out_.loss_average = loss_average_.value();
    out_.noise_scale = noise_.value();
    out_.noise_trace = noise_.trace();
    out_.gradient_norm2 = noise_.gradient_norm2();
    return out_;
  }

  /// The loop state: a record of kind 1 - whether training has ended early
  /// (by a callback or a rule other than max_steps, which a resumed run
  /// checks by itself), the batch size, the moving averages - then the
  /// stopping rules' state, then every callback's. (Kind 0, still read,
  /// lacks the batch size.)
  std::vector<double> loop_state() const {
    std::vector<double> out{1.0, ended_early_ ? 1.0 : 0.0, double(options_.batch)};
    loss_average_.save_state(out);
    noise_.save_state(out);
    stopper_.save_state(out);
    for (Callback* const* c = list_; *c; ++c) (*c)->save_state(out);
    return out;
  }

  template <class Phase>
  void phase(Phase f) {
    run_phase(step_.aggregation(), list_, n_callbacks_, state_, f);
  }

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }

  StepType& step_;
  const Theta& theta_;
  const Data& data_;
  const Validation* validation_;
  const FitOptions& options_;
  Callback* const* list_;
  std::size_t n_callbacks_;
  int rank_, ranks_;
  bool global_;
  MiniBatchSampler<Memory> sampler_;
  std::int64_t batches_;
  Stopper stopper_;
  MovingAverage loss_average_;
  NoiseScale noise_;
  FitState state_;
  FitResult out_;
  MicroBatches<Rows> micro_;
  bool stopped_ = false, ended_early_ = false;
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
};

}  // namespace detail

/// Trains `theta` with `step` on `data` for `options.epochs` epochs and
/// reports to `callbacks` (objects derived from Callback), evaluating the
/// training objective (and that of `validation`, if given) after every
/// epoch. Epoch e's mini-batch order is the seeded shuffle
/// MiniBatchSampler(seed).shuffle(e), the same on every rank, so a run
/// resumed from a checkpoint (options.start) continues the trajectory of
/// the uninterrupted run exactly; a resume with another seed than the
/// checkpoint's is refused on every rank before the first step.
///
/// Each update sums `accumulate` consecutive mini-batches locally and
/// aggregates once (Step with MicroBatches). Stops early when a stopping
/// rule or a callback says so; every rank stops at the same update.
/// Blocking; collective with a distributed aggregation.
template <class StepType, class Theta, class Data, class Validation, class... Callbacks>
FitResult fit(StepType& step, const Theta& theta, const Data& data, const Validation* validation,
              const FitOptions& options, Callbacks&... callbacks) {
  static_assert((std::is_base_of<Callback, Callbacks>::value && ...),
                "gradsum::fit: every callback must derive from gradsum::Callback");
  Callback* list[sizeof...(Callbacks) + 1] = {static_cast<Callback*>(&callbacks)..., nullptr};
  detail::agree_to_fit(step.aggregation(), options, data, validation, list);
  detail::FitLoop<StepType, Theta, Data, Validation> loop(step, theta, data, validation, options,
                                                          list, sizeof...(Callbacks));
  return loop.run();
}

/// fit() without validation data.
template <class StepType, class Theta, class Data, class... Callbacks>
FitResult fit(StepType& step, const Theta& theta, const Data& data, const FitOptions& options,
              Callbacks&... callbacks) {
  return fit(step, theta, data, static_cast<const Data*>(nullptr), options, callbacks...);
}

}  // namespace gradsum
