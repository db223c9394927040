// SPDX-License-Identifier: Apache-2.0
// gradsum-train --text FILE --model gpt:…, compiled once per part of the
// execution spaces (models.hpp): a GPT over the characters of a text file,
// in float (the default) or double. A step is a global batch of --batch
// windows drawn at seeded offsets (TextWindows::draw_offsets, the same on
// every rank), each rank taking its contiguous share; an epoch is as many
// steps as the training characters hold batches of windows. Checkpoints
// hold the vocabulary, and a resumed run continues the same steps bit for
// bit (the batches of step s are a function of the seed and s alone).

#include "save.hpp"
#include "train_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum_train {
namespace {

// The objective over every window of `windows` at stride context, the
// windows split among the ranks as a mini-batch is. Collective.
template <class Step, class Theta, class Windows, class Data, class Index>
double text_loss(Step& step, const Theta& theta, const Windows& windows, const Data& data,
                 const Index& index) {
  const auto& a = step.aggregation();
  const auto all = windows.select(windows.full_batch_offsets(0, windows.num_windows()), index);
  return step.evaluate_loss(theta, data, gradsum::partition(all, a.size(), a.rank())).loss;
}

// GPT-2's start (gradsum::gpt_initial_parameters), the same on every rank.
template <class Theta>
void start_from(const Theta& theta, const gradsum::GptShape& shape, std::uint64_t seed) {
  const auto start = gradsum::gpt_initial_parameters(shape, seed);
  auto host = Kokkos::create_mirror_view(theta);
  for (std::size_t j = 0; j < start.size(); ++j)
    host(j) = typename Theta::non_const_value_type(start[j]);
  Kokkos::deep_copy(theta, host);
}

// The first line: the model, the data and how the steps go.
template <class Space, class Scalar>
void announce(const Context& context, int parameters, std::int64_t characters, int vocabulary,
              int ranks, std::int64_t batch, std::int64_t per_epoch) {
  const Options& o = context.options;
  context.say("gradsum-train: gpt %d layers x %d heads, width %d, context %d, %s, %d parameters, "
              "%lld training characters (vocabulary %d), space %s, %d rank%s, batch %lld windows, "
              "%lld steps per epoch, network path\n",
              o.gpt_layers, o.gpt_heads, o.gpt_width, o.gpt_context,
              sizeof(Scalar) == 4 ? "float" : "double", parameters,
              static_cast<long long>(characters), vocabulary,
              gradsum::space_name<Space>().c_str(), ranks, ranks > 1 ? "s" : "",
              static_cast<long long>(batch), static_cast<long long>(per_epoch));
}

// --resume: the checkpoint's parameters and optimizer state in `theta` and
// the step, checked against this run (its vocabulary and seed); returns
// the position it continues from. Collective.
template <class Step, class Theta>
gradsum::TrainingPosition resume_from(const Context& context, const TextInputs& text, Step& step,
                                      const Theta& theta) {
  const Options& o = context.options;
  gradsum::CheckpointData saved;
  const gradsum::TrainingPosition start = gradsum::load_checkpoint(o.resume, step, theta, &saved);
  gradsum::on_every_rank(step.aggregation(), [&] {  // each rank read its own copy
    if (saved.vocabulary != text.vocabulary.characters())
      gradsum::fail("--resume: '", o.resume, "' was written for a vocabulary of ",
                    saved.vocabulary.size(), " characters, not the ", text.vocabulary.size(),
                    " of '", o.text, "' (the tokens would be numbered differently)");
    if (start.seed != o.seed)
      gradsum::fail("--resume: '", o.resume, "' was written with --seed ", start.seed,
                    ", this run has --seed ", o.seed);
  });
  context.say("resumed from '%s' after step %lld\n", o.resume.c_str(),
              static_cast<long long>(start.step));
  return start;
}

// How long the run is: windows per batch, steps per epoch and in all.
struct TextPlan {
  std::int64_t batch = 32, per_epoch = 1, steps = 0;

  TextPlan(const Options& o, std::int64_t training_tokens) {
    if (o.batch > 0) batch = o.batch;
    per_epoch = std::max<std::int64_t>(1, training_tokens / (batch * std::int64_t(o.gpt_context)));
    steps = per_epoch * o.epochs;
    if (o.max_steps > 0) steps = std::min(steps, o.max_steps);
  }
  // The position after `done` steps, as a checkpoint stores it.
  gradsum::TrainingPosition after(std::int64_t done, std::uint64_t seed) const {
    return {done, done / per_epoch, done % per_epoch, seed};
  }
};

// --print-gradient: over every training window at stride context.
template <class Step, class Theta, class Windows, class Data>
void print_text_gradient(const Context& context, Step& step, const Theta& theta,
                         const Windows& train, const Data& data) {
  using Memory = typename Step::memory_space;
  Kokkos::View<std::int64_t*, Memory> all("gradsum_train::windows",
                                          std::size_t(train.num_windows()));
  const auto windows = train.select(train.full_batch_offsets(0, train.num_windows()), all);
  const auto& a = step.aggregation();
  print_gradient(context, step, theta, data, gradsum::partition(windows, a.size(), a.rank()));
}

// Steps [from, plan.steps), each a batch of windows drawn from the seed and
// the step number, with a line at each epoch's end and every 100 steps,
// and `checkpoint(done)` every --checkpoint-every epochs. Returns the last
// step's result. Collective.
template <class Step, class Theta, class Windows, class Data, class Checkpoint>
gradsum::StepResult take_steps(const Context& context, Step& step, const Theta& theta,
                               const Windows& train, const Data& data, const TextPlan& plan,
                               std::int64_t from, const Checkpoint& checkpoint) {
  using Memory = typename Step::memory_space;
  const Options& o = context.options;
  const int rank = step.aggregation().rank(), ranks = step.aggregation().size();
  Kokkos::View<std::int64_t*, Memory> index("gradsum_train::windows", std::size_t(plan.batch));
  gradsum::StepResult result;
  for (std::int64_t s = from; s < plan.steps; ++s) {
    const auto drawn = train.select(train.draw_offsets(o.seed, s, plan.batch), index);
    result = step(theta, data, gradsum::partition(drawn, ranks, rank));
    const bool epoch_end = (s + 1) % plan.per_epoch == 0;
    if (epoch_end || s + 1 == plan.steps)
      context.say("epoch %lld/%d step %lld loss=%.6g grad_norm=%.6g\n",
                  static_cast<long long>((s + plan.per_epoch) / plan.per_epoch), o.epochs,
                  static_cast<long long>(s + 1), result.loss, result.gradient_norm);
    else if ((s + 1) % 100 == 0)
      context.say("step %lld loss=%.6g\n", static_cast<long long>(s + 1), result.loss);
    context.say.flush();
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && epoch_end &&
        ((s + 1) / plan.per_epoch) % o.checkpoint_every == 0 && s + 1 < plan.steps)
      checkpoint(s + 1);
  }
  return result;
}

// --bucket-cap auto on several ranks: rank 0's backward pass timed alone
// (a step of its own without aggregation, over its share of the first
// batch, after one pass to warm up), then the step model's cap for it on
// the link measured now (choose_bucket_cap); cap 0: not chosen. A probe
// that fails leaves one bucket (the step itself then reports the problem,
// on every rank). Collective.
template <class Space, class Scalar, class Windows, class Data>
ChosenBuckets auto_buckets(const Context& context, const Aggregation& aggregation,
                             const gradsum::GptShape& shape, const Windows& train,
                             const Data& data, std::int64_t batch) {
  const Options& o = context.options;
  if (o.bucket_cap >= 0 || aggregation.size() < 2) return {};
  std::vector<gradsum::plan::FinalPoint> profile;
  if (aggregation.rank() == 0) {
    try {
      auto probe = gradsum::make_step<Scalar>(Space(), gradsum::Gpt(shape),
                                              gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{},
                                              gradsum::Objective{o.l2, true}, gradsum::Analytic{},
                                              gradsum::Sum{}, gradsum::Local{});
      auto theta = probe.make_parameters();
      start_from(theta, shape, o.seed);
      Kokkos::View<std::int64_t*, typename Space::memory_space> index("gradsum_train::probe",
                                                                     std::size_t(batch));
      const auto rows = gradsum::partition(train.select(train.draw_offsets(o.seed, 0, batch), index),
                                           aggregation.size(), 0);
      probe.evaluate(theta, data, rows);  // to warm up
      gradsum::plan::BackwardRecorder recorder;
      probe.evaluate(theta, data, rows);
      profile = recorder.profile(sizeof(Scalar));
    } catch (const gradsum::Error&) {
      profile.clear();
    }
  }
  return choose_bucket_cap(aggregation, profile, std::size_t(gradsum::Gpt(shape).num_parameters()),
                           sizeof(Scalar));
}

// What --bucket-cap auto chose, and why.
void say_chosen(const Context& context, const ChosenBuckets& c) {
  if (c.cap == 0) return;
  const std::string buckets =
      c.cap >= one_bucket ? std::string("one bucket after the backward pass")
                          : gradsum::concat("buckets of at most ", c.cap, " bytes");
  context.say("gradsum-train: --bucket-cap auto: a backward pass of %.3g ms on rank 0 and a link "
              "of %.3g GB/s and %.3g us measured; the step model picks %s (predicted "
              "communication past the backward pass %.3g ms, one message %.3g ms)\n",
              c.backward_seconds * 1e3, c.network.bandwidth / 1e9, c.network.latency * 1e6,
              buckets.c_str(), c.exposed_seconds * 1e3, c.one_message_seconds * 1e3);
}

// The last line: the final loss (or that the checkpoint left no step) and,
// when `validate`, the loss over every window of `held_out`. Collective.
template <class Scalar, class Step, class Theta, class Windows>
void say_final(const Context& context, Step& step, const Theta& theta, const Windows& held_out,
               bool validate, const gradsum::StepResult& result, std::int64_t from,
               std::int64_t steps) {
  if (from >= steps)
    context.say("final: the checkpoint is at step %lld, no step left before step %lld",
                static_cast<long long>(from), static_cast<long long>(steps));
  else
    context.say("final loss=%.10g grad_norm=%.10g", result.loss, result.gradient_norm);
  if (validate) {
    Kokkos::View<std::int64_t*, typename Step::memory_space> all(
        "gradsum_train::validation_windows", std::size_t(held_out.num_windows()));
    context.say(" validation_loss=%.10g",
                text_loss(step, theta, held_out, held_out.template dataset<Scalar>(), all));
  }
  context.say("\n");
}

template <class Space, class Scalar>
int train_gpt_as(const Context& context, const TextInputs& text, const Aggregation& aggregation) {
  using Memory = typename Space::memory_space;
  const Options& o = context.options;
  const int T = o.gpt_context;
  const gradsum::GptShape shape{text.vocabulary.size(), T, o.gpt_layers, o.gpt_heads,
                                o.gpt_width};
  const gradsum::Gpt gpt(shape);
  const gradsum::TextWindows<Memory> train(text.train, T, o.text + " (training part)");
  const auto data = train.template dataset<Scalar>();
  const gradsum::Scheduled<gradsum::FirstOrder> scheduled(
      first_order_method(o), parse_schedule(o.schedule).with_warmup(o.warmup));
  const TextPlan plan(o, train.num_tokens());
  const ChosenBuckets chosen =
      auto_buckets<Space, Scalar>(context, aggregation, shape, train, data, plan.batch);
  auto step = gradsum::make_step<Scalar>(
      Space(), gpt, gradsum::SoftmaxCrossEntropy{},
      gradsum::clip_gradient_norm(scheduled, o.clip_norm > 0 ? o.clip_norm : HUGE_VAL),
      gradsum::Objective{o.l2, true}, gradsum::Analytic{}, gradsum::Sum{},
      chosen.cap != 0 ? make_aggregation(o, chosen.cap) : aggregation);
  auto theta = step.make_parameters();
  start_from(theta, shape, o.seed);
  if (!o.init_params.empty()) init_params(o, step, gpt, theta);
  gradsum::TrainingPosition position{0, 0, 0, o.seed};
  if (!o.resume.empty()) position = resume_from(context, text, step, theta);
  if (o.print_gradient) {
    print_text_gradient(context, step, theta, train, data);
    return 0;
  }
  check_outputs(step.aggregation(), o);
  announce<Space, Scalar>(context, gpt.num_parameters(), train.num_tokens(),
                          text.vocabulary.size(), step.aggregation().size(), plan.batch,
                          plan.per_epoch);
  say_chosen(context, chosen);
  print_buckets(context, step.aggregation().size(), true, step.optimizer_shard(),
                step.scatters_gradient(), step.num_parameters(),
                chosen.cap != 0 ? chosen.cap : o.bucket_cap);
  // The validation part, checked before training (shorter than a window:
  // an error now, not after the run).
  std::vector<std::int32_t> validation_ids = text.validation;
  if (validation_ids.empty()) validation_ids.assign(std::size_t(T) + 1, 0);  // (unused)
  const gradsum::TextWindows<Memory> held_out(validation_ids, T, o.text + " (validation part)");

  auto checkpoint = [&](std::int64_t done) {
    gradsum::save_checkpoint(o.checkpoint, step, theta, plan.after(done, o.seed), {}, {}, {},
                             text.vocabulary.characters());
  };
  const auto result = take_steps(context, step, theta, train, data, plan, position.step,
                                 checkpoint);
  say_final<Scalar>(context, step, theta, held_out, !text.validation.empty(), result,
                    position.step, plan.steps);
  if (!o.checkpoint.empty()) checkpoint(std::max(position.step, plan.steps));
  gradsum::ModelNotes notes;
  notes.vocabulary = text.vocabulary.characters();
  save_params(o, step, theta, notes);
  return 0;
}

}  // namespace

template <int Part>
int train_gpt(const Context& context, const TextInputs& text, const Aggregation& aggregation) {
  return on_space<Part>(context.options, [&](auto space) {
    using Space = decltype(space);
    if (context.options.precision == "double")
      return train_gpt_as<Space, double>(context, text, aggregation);
    return train_gpt_as<Space, float>(context, text, aggregation);
  });
}

template int train_gpt<GRADSUM_SPACE_PART>(const Context&, const TextInputs&, const Aggregation&);

}  // namespace gradsum_train
