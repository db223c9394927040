// SPDX-License-Identifier: Apache-2.0
// gradsum-train --text FILE --model gpt:…, compiled once per part of the
// execution spaces (models.hpp): a GPT over the characters of a text file,
// in float (the default) or double. A step is a global batch of --batch
// windows drawn at seeded offsets (TextWindows::draw_offsets, the same on
// every rank), each rank taking its contiguous share; an epoch is as many
// steps as the training characters hold batches of windows.

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
  return step.evaluate(theta, data, gradsum::partition(all, a.size(), a.rank())).loss;
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

template <class Space, class Scalar>
int train_gpt_as(const Context& context, const TextInputs& text, const Aggregation& aggregation) {
  using Memory = typename Space::memory_space;
  const Options& o = context.options;
  const int T = o.gpt_context;
  const gradsum::GptShape shape{text.vocabulary.size(), T, o.gpt_layers, o.gpt_heads,
                                o.gpt_width};
  const auto gpt = gradsum::make_gpt(shape);
  const gradsum::TextWindows<Memory> train(text.train, T, o.text + " (training part)");
  const auto data = train.template dataset<Scalar>();
  const gradsum::Scheduled<gradsum::FirstOrder> scheduled(
      first_order_method(o), parse_schedule(o.schedule).with_warmup(o.warmup));
  const gradsum::Objective objective{o.l2, true};
  auto step = gradsum::make_step<Scalar>(
      Space(), gpt, gradsum::SoftmaxCrossEntropy{},
      gradsum::clip_gradient_norm(scheduled, o.clip_norm > 0 ? o.clip_norm : HUGE_VAL), objective,
      gradsum::Analytic{}, gradsum::Sum{}, aggregation);
  auto theta = step.make_parameters();
  start_from(theta, shape, o.seed);
  check_outputs(step.aggregation(), o);

  const int rank = step.aggregation().rank(), ranks = step.aggregation().size();
  const std::int64_t batch = o.batch > 0 ? o.batch : 32;
  const std::int64_t per_epoch =
      std::max<std::int64_t>(1, train.num_tokens() / (batch * std::int64_t(T)));
  std::int64_t steps = per_epoch * o.epochs;
  if (o.max_steps > 0) steps = std::min(steps, o.max_steps);
  announce<Space, Scalar>(context, gpt.num_parameters(), train.num_tokens(),
                          text.vocabulary.size(), ranks, batch, per_epoch);

  // The validation part, checked before training (shorter than a window:
  // an error now, not after the run).
  std::vector<std::int32_t> validation_ids = text.validation;
  if (validation_ids.empty()) validation_ids.assign(std::size_t(T) + 1, 0);  // (unused)
  const gradsum::TextWindows<Memory> held_out(validation_ids, T, o.text + " (validation part)");

  Kokkos::View<std::int64_t*, Memory> index("gradsum_train::windows", std::size_t(batch));
  gradsum::StepResult result;
  for (std::int64_t s = 0; s < steps; ++s) {
    const auto drawn = train.select(train.draw_offsets(o.seed, s, batch), index);
    result = step(theta, data, gradsum::partition(drawn, ranks, rank));
    if ((s + 1) % per_epoch == 0 || s + 1 == steps)
      context.say("epoch %lld/%d step %lld loss=%.6g grad_norm=%.6g\n",
                  static_cast<long long>((s + per_epoch) / per_epoch), o.epochs,
                  static_cast<long long>(s + 1), result.loss, result.gradient_norm);
    else if ((s + 1) % 100 == 0)
      context.say("step %lld loss=%.6g\n", static_cast<long long>(s + 1), result.loss);
  }
  context.say("final loss=%.10g grad_norm=%.10g", result.loss, result.gradient_norm);
  if (!text.validation.empty()) {
    Kokkos::View<std::int64_t*, Memory> all("gradsum_train::validation_windows",
                                            std::size_t(held_out.num_windows()));
    context.say(" validation_loss=%.10g",
                text_loss(step, theta, held_out, held_out.template dataset<Scalar>(), all));
  }
  context.say("\n");
  // One value per line (the flags refuse safetensors for a GPT for now).
  if (!o.save_params.empty())
    on_rank0(step.aggregation(), [&] { write_params(o.save_params, host_values(theta)); });
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
