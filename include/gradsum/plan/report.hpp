// SPDX-License-Identifier: Apache-2.0
#pragma once

// The "should I distribute?" report: the cost model, the memory check and
// the batch advice of gradsum/plan applied to one job, printed with the
// reasoning and the verdict. One writer for examples/should_i_distribute
// and `gradsum-train --plan`, whose outputs must stay identical.

#include <gradsum/plan/algorithms.hpp>
#include <gradsum/plan/cost_model.hpp>
#include <gradsum/plan/overlap.hpp>
#include <gradsum/plan/strategy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace gradsum {
namespace plan {

/// A job to decide about: the workload, the network, the budget, and the
/// assumptions behind the numbers, printed with the answer by explain().
struct Case {
  /// The first line of the report.
  std::string title;
  /// Printed one per line, each after "assume ".
  std::vector<std::string> assumptions;
  Workload work;
  Network network;
  Budget budget;
  /// What one worker is, for the verdict ("one GPU").
  std::string one_worker = "one worker";
  /// What a sample is, for the batch advice ("reviews").
  std::string sample = "samples";
  /// The memory check is reported when memory.device_bytes > 0.
  MemoryNeeds memory;
  /// The batch advice is reported when noise_scale > 0, for workers x
  /// per_worker_batch samples per step.
  double noise_scale = 0;
  double per_worker_batch = 0;
  /// How ranks share nodes, for the bucket plan's two-level sum (stated
  /// once in the report as an assumption).
  Nodes nodes;
};

/// Seconds in an hour, a day and a (365-day) year.
constexpr double seconds_per_hour = 3600;
constexpr double seconds_per_day = 24 * seconds_per_hour;
constexpr double seconds_per_year = 365 * seconds_per_day;

/// The classic small case: 50,000 movie reviews, a BERT-base-sized
/// classifier fine-tuned in 2.5 h on one GPU, ten machines on 10 Gb/s
/// Ethernet, a week of set-up. Distributing does not pay.
inline Case reviews_case() {
  Case c;
  c.title = "(a) 50,000 reviews, a model that trains in under three hours on one GPU, "
            "ten machines, a week of engineering set-up";
  c.work.samples_per_epoch = 50000;
  c.work.batch = 32;
  c.work.epochs = 3;
  // 2.5 h on one GPU for 3 epochs of 50,000 reviews: 0.06 s per review.
  c.work.seconds_per_sample = 2.5 * seconds_per_hour / (3 * 50000);
  c.work.gradient_bytes = 110e6 * 4;  // 110 M parameters, float32 gradients
  c.work.overhead_seconds = 0.005;
  c.network = {1.25e9, 50e-6};  // 10 Gb/s Ethernet, 50 us per message
  c.budget.max_workers = 10;
  c.budget.setup_seconds = 7 * seconds_per_day;  // one calendar week before the first run
  c.budget.runs = 1;
  c.one_worker = "one GPU";
  c.sample = "reviews";
  c.memory.parameters = 110e6;  // float32 weights and gradients, Adam's two moments
  c.memory.activation_bytes = 32.0 * 256 * 768 * 12 * 34;  // batch x tokens x hidden x layers x 34 B
  c.memory.device_bytes = 16e9;
  c.noise_scale = 256;
  c.per_worker_batch = 32;
  c.assumptions = {
      "model: 110 M parameters (BERT-base size), float32 gradients = 440 MB summed per step",
      "training: 3 epochs, batch 32 reviews, 2.5 h on one GPU (0.06 s per review), 5 ms per-step "
      "overhead",
      "network: 10 Gb/s Ethernet = 1.25 GB/s per machine, 50 us latency, ring allreduce",
      "set-up: one calendar week (168 h) before the first distributed run; one training run",
      "memory: 16 GB per GPU; Adam (8 B per parameter); activations of 32 reviews of 256 tokens "
      "= 2.57 GB",
      "gradient noise scale: 256 reviews (a fine-tuning task; measure yours with gradsum-train "
      "--noise-scale)"};
  return c;
}

/// The classic large case: a 175-billion-parameter language model on 300
/// billion tokens (about 1.2 TB of text), years on one accelerator.
/// Distributing pays, and the model must be split as well.
inline Case language_model_case() {
  Case c;
  c.title = "(b) hundreds of billions of parameters on terabytes of text, years on one device";
  const double parameters = 175e9, tokens = 300e9, sequence = 2048;
  c.work.samples_per_epoch = tokens / sequence;  // sequences of 2048 tokens
  c.work.batch = 1536;                           // 3.1 M tokens per step
  c.work.epochs = 1;
  // 6 FLOPs per parameter per token (forward + backward) at a sustained
  // 150 TFLOP/s per device: 14.3 s per sequence.
  c.work.seconds_per_sample = 6 * parameters * sequence / 150e12;
  c.work.gradient_bytes = parameters * 2;  // bfloat16 gradients: 350 GB
  c.work.overhead_seconds = 0.05;
  c.network = {50e9, 5e-6};  // 400 Gb/s InfiniBand per device
  c.budget.max_workers = 2048;
  c.budget.setup_seconds = 90 * seconds_per_day;  // three months of engineering
  c.budget.runs = 1;
  c.one_worker = "one device";
  c.sample = "sequences";
  c.memory.parameters = parameters;
  c.memory.weight_bytes = 2;      // bfloat16
  c.memory.gradient_bytes = 2;    // bfloat16
  c.memory.optimizer_bytes = 12;  // float32 master weights and Adam's two moments
  c.memory.activation_bytes = 1.0 * sequence * 12288 * 96 * 34;  // one sequence, 96 layers of 12288
  c.memory.device_bytes = 80e9;
  c.noise_scale = 1000;
  c.per_worker_batch = 1;
  c.assumptions = {
      "model: 175 B parameters, bfloat16 gradients = 350 GB summed per step",
      "data: 300 B tokens (about 1.2 TB of text) in sequences of 2048, one epoch, batch 1536 "
      "sequences",
      "compute: 6 FLOPs per parameter and token at 150 TFLOP/s sustained = 14.3 s per sequence",
      "network: 400 Gb/s InfiniBand = 50 GB/s per device, 5 us latency, ring allreduce",
      "set-up: three months (90 days); the time model counts data parallelism only: the "
      "communication that splitting the model adds is not modelled",
      "memory: 80 GB per device; bfloat16 weights and gradients, float32 master weights and "
      "Adam moments (16 B per parameter); activations of one sequence = 82.1 GB",
      "gradient noise scale: 1000 sequences (about 2 M tokens, of the order reported for large "
      "language models)"};
  return c;
}

/// A duration of `s` seconds in the unit a person would use, three
/// significant digits: "60 ms", "2.51 h", "7.05 days".
inline std::string format_duration(double s) {
  char text[64];
  if (s == 0) return "0";
  if (s < 1e-3) std::snprintf(text, sizeof text, "%.3g us", s * 1e6);
  else if (s < 1) std::snprintf(text, sizeof text, "%.3g ms", s * 1e3);
  else if (s < 120) std::snprintf(text, sizeof text, "%.3g s", s);
  else if (s < 2 * seconds_per_hour) std::snprintf(text, sizeof text, "%.3g min", s / 60);
  else if (s < 3 * seconds_per_day) std::snprintf(text, sizeof text, "%.3g h", s / seconds_per_hour);
  else if (s < seconds_per_year) std::snprintf(text, sizeof text, "%.3g days", s / seconds_per_day);
  else std::snprintf(text, sizeof text, "%.3g years", s / seconds_per_year);
  return text;
}

/// A byte count in the unit a person would use, three significant digits
/// (decimal units): "440 MB", "1.25 GB".
inline std::string format_bytes(double bytes) {
  char text[64];
  if (bytes < 1e6) std::snprintf(text, sizeof text, "%.3g kB", bytes / 1e3);
  else if (bytes < 1e9) std::snprintf(text, sizeof text, "%.3g MB", bytes / 1e6);
  else if (bytes < 1e12) std::snprintf(text, sizeof text, "%.3g GB", bytes / 1e9);
  else std::snprintf(text, sizeof text, "%.3g TB", bytes / 1e12);
  return text;
}

/// A count or ratio without an exponent below ten million: 1536, 9.5, 606.
inline std::string format_number(double x) {
  char text[64];
  if (x >= 1e7 || x != x) std::snprintf(text, sizeof text, "%.3g", x);
  else if (x >= 100 || x == std::floor(x)) std::snprintf(text, sizeof text, "%.0f", x);
  else std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

}  // namespace plan

namespace detail {

/// explain()'s table: the predictions for N = 1, 2, 4, ... workers, the
/// fastest N and the largest.
inline void explain_table(const plan::Case& c, const plan::Plan& planned, std::FILE* out) {
  using plan::format_duration;
  std::fprintf(out, "  %8s %11s %11s %11s %7s %9s %7s %12s\n", "workers", "step", "compute",
               "allreduce", "comm%", "speedup", "effic.", "one run");
  std::vector<int> shown;
  for (int n = 1; n < c.budget.max_workers; n *= 2) shown.push_back(n);
  for (int n : {planned.best_workers, c.budget.max_workers}) {
    bool seen = false;
    for (int s : shown) seen = seen || s == n;
    if (!seen) shown.push_back(n);
  }
  std::sort(shown.begin(), shown.end());
  for (int n : shown) {
    const auto& p = planned.at(n);
    std::fprintf(out, "  %8d %11s %11s %11s %6.1f%% %9.3g %6.1f%% %12s%s\n", n,
                 format_duration(p.step_seconds).c_str(),
                 format_duration(p.compute_seconds).c_str(),
                 format_duration(p.communication_seconds).c_str(), 100 * p.communication_share,
                 p.speedup, 100 * p.efficiency, format_duration(p.training_seconds).c_str(),
                 n == planned.best_workers ? "  <- fastest" : "");
  }
}

/// explain()'s reasoning: one worker's times, then what the fastest choice
/// saves and when its set-up pays back.
inline void explain_reasoning(const plan::Case& c, const plan::Plan& planned, std::FILE* out) {
  using plan::format_bytes;
  using plan::format_duration;
  const auto& one = planned.at(1);
  const auto& best = planned.at(planned.best_workers);
  std::fprintf(out, "  reasoning:\n");
  std::fprintf(out, "    on %s a step takes %s and a training run %s.\n", c.one_worker.c_str(),
               format_duration(one.step_seconds).c_str(),
               format_duration(one.training_seconds).c_str());
  if (planned.best_workers <= 1) {
    std::fprintf(out, "    no number of workers up to %d makes a step faster: communication "
                      "costs more than the computation it splits.\n",
                 c.budget.max_workers);
    return;
  }
  std::fprintf(out,
               "    the fastest choice, %d workers, takes %s per step: speedup %.3g, efficiency "
               "%.0f%%; the allreduce of %s is %.0f%% of the step.\n",
               planned.best_workers, format_duration(best.step_seconds).c_str(), best.speedup,
               100 * best.efficiency, format_bytes(c.work.gradient_bytes).c_str(),
               100 * best.communication_share);
  std::fprintf(out, "    a run then takes %s, saving %s per run; the set-up of %s ",
               format_duration(best.training_seconds).c_str(),
               format_duration(one.training_seconds - best.training_seconds).c_str(),
               format_duration(c.budget.setup_seconds).c_str());
  if (c.budget.setup_seconds > 0)
    std::fprintf(out, "pays back after %.3g run(s) (%.3g planned).\n", planned.break_even_runs,
                 c.budget.runs);
  else
    std::fprintf(out, "costs nothing.\n");
}

/// explain()'s memory check: what one worker holds against a device, and
/// the strategy that follows.
inline void explain_memory(const plan::MemoryNeeds& needs, std::FILE* out) {
  using plan::format_bytes;
  using plan::Strategy;
  const auto m = plan::check_memory(needs);
  std::fprintf(out, "  memory per worker: weights %s + gradients %s + optimizer state %s + "
                    "activations %s = %s, against %s per device: %s.\n",
               format_bytes(m.weights).c_str(), format_bytes(m.gradients).c_str(),
               format_bytes(m.optimizer).c_str(), format_bytes(m.activations).c_str(),
               format_bytes(m.total).c_str(), format_bytes(m.device).c_str(),
               m.total <= m.device ? "fits" : "does not fit");
  std::fprintf(out, "  strategy: %s", plan::describe(m.strategy));
  switch (m.strategy) {
    case Strategy::data_parallel:
      std::fprintf(out, ": every worker holds the whole model.\n");
      break;
    case Strategy::optimizer_sharding:
      std::fprintf(out, " over at least %.0f workers: weights, gradients and activations fit, "
                        "the optimizer state of %s does not.\n",
                   m.devices, format_bytes(m.optimizer).c_str());
      break;
    case Strategy::sequence_parallel:
      std::fprintf(out, " over at least %.0f devices per sequence: the model state fits, the "
                        "activations of %s do not.\n",
                   m.devices, format_bytes(m.activations).c_str());
      break;
    case Strategy::model_parallel:
      std::fprintf(out, " over at least %.0f devices per copy of the model (%s against %s "
                        "each), then data parallelism across the copies.\n",
                   m.devices, format_bytes(m.total).c_str(), format_bytes(m.device).c_str());
      break;
  }
}

/// explain()'s batch advice for the workers the verdict chooses (all of
/// them when it says not to distribute).
inline void explain_batch(const plan::Case& c, const plan::Plan& planned, std::FILE* out) {
  using plan::format_number;
  const double n = planned.distribute ? planned.best_workers : c.budget.max_workers;
  const auto a = plan::advise_batch(c.noise_scale, c.per_worker_batch, n);
  std::fprintf(out,
               "  batch: %s workers x %s = %s %s per step against a noise scale of %s: "
               "%sx fewer steps than one worker (at most %sx with any number); useful up "
               "to about %s workers%s; scale the learning rate %sx (linear rule) with a "
               "warm-up over the first epochs.\n",
               format_number(a.workers).c_str(), format_number(a.per_worker_batch).c_str(),
               format_number(a.aggregate_batch).c_str(), c.sample.c_str(),
               format_number(a.noise_scale).c_str(), format_number(a.step_reduction).c_str(),
               format_number(a.max_step_reduction).c_str(),
               format_number(std::floor(a.useful_workers)).c_str(),
               a.past_noise_scale ? " (this batch is past the noise scale: extra workers "
                                    "mostly cost samples)" : "",
               format_number(a.learning_rate_scale).c_str());
}

/// The workers the verdict speaks of: the fastest N when it says to
/// distribute, else the distributed N with the least total time (nullptr
/// when only one worker was considered).
inline const plan::Prediction* verdict_workers(const plan::Plan& planned) {
  if (planned.distribute) return &planned.at(planned.best_workers);
  const plan::Prediction* other = nullptr;
  for (const auto& p : planned.predictions)
    if (p.workers > 1 && (!other || p.total_seconds < other->total_seconds)) other = &p;
  return other;
}

/// The sum `a` in the bucket plan's words, with `nodes` for two_level on
/// `workers` ranks.
inline std::string describe_sum(SumAlgorithm a, const plan::Nodes& nodes, int workers) {
  if (a != SumAlgorithm::two_level) return "flat sum";
  const int per_node = std::min(nodes.ranks_per_node, workers);
  return "two-level sum (" + std::to_string((workers + per_node - 1) / per_node) +
         " nodes of " + std::to_string(per_node) + ")";
}

/// explain()'s statement of the nodes the bucket plan assumes.
inline void explain_nodes(const plan::Case& c, std::FILE* out) {
  if (std::size_t(c.work.gradient_bytes) == 0 || c.budget.max_workers < 2) return;
  std::fprintf(out, "  assume bucket plans: %d consecutive ranks per node, linked inside a node "
                    "at %s/s and %s latency, for the two-level sum\n",
               c.nodes.ranks_per_node, plan::format_bytes(c.nodes.link.bandwidth).c_str(),
               plan::format_duration(c.nodes.link.latency).c_str());
}

/// explain()'s bucket plan: at the verdict's workers, and at 1,024 and
/// 4,096 where the budget allows, the bucket size and the sum (flat, or
/// two-level on c.nodes) the step model picks (plan/overlap.hpp, on a
/// backward profile assumed even over 24 layers) and the step it predicts
/// against one flat message after the backward pass.
inline void explain_buckets(const plan::Case& c, const plan::Plan& planned, std::FILE* out) {
  using plan::format_bytes;
  using plan::format_duration;
  const auto n = std::size_t(c.work.gradient_bytes);  // counted in bytes
  const plan::Prediction* verdict = verdict_workers(planned);
  if (n == 0 || !verdict) return;
  std::vector<int> shown{verdict->workers};
  for (int w : {1024, 4096})
    if (w <= c.budget.max_workers && w != verdict->workers) shown.push_back(w);
  std::vector<std::size_t> caps{0};
  for (std::size_t cap = std::size_t(1) << 20; cap <= (std::size_t(4) << 30); cap *= 4)
    caps.push_back(cap);
  for (int w : shown) {
    const auto& p = planned.at(w);
    const auto profile = plan::even_backward(p.compute_seconds, n, 24);
    const auto pick = plan::choose_buckets(profile, n, 1.0, c.network, w, caps,
                                           SumAlgorithm::automatic, c.nodes);
    const double step = p.compute_seconds + pick.prediction.exposed_seconds + p.overhead_seconds;
    const std::string sum = describe_sum(pick.algorithm, c.nodes, w);
    std::fprintf(out, "  buckets at %d workers: ", w);
    if (pick.size == 0) {
      std::fprintf(out, "one message after the backward pass, the %s, is fastest (step %s, "
                        "%.3gx one flat message): buckets of up to 4 GB cost more in latency "
                        "than they hide\n",
                   sum.c_str(), format_duration(step).c_str(), p.step_seconds / step);
      continue;
    }
    // What one message of the same sum would leave exposed: all of it.
    const double alone = plan::predict_overlap(profile, n, 1.0, Buckets{}, c.network, w,
                                               pick.algorithm, c.nodes).exposed_seconds;
    std::fprintf(out,
                 "the %s in %s buckets (%zu messages) hides %.0f%% of its communication "
                 "behind the backward pass: step %s against %s with one flat message after "
                 "it (%.3gx)\n",
                 sum.c_str(), format_bytes(double(pick.size)).c_str(), pick.prediction.buckets,
                 100 * (1 - pick.prediction.exposed_seconds / alone),
                 format_duration(step).c_str(), format_duration(p.step_seconds).c_str(),
                 p.step_seconds / step);
  }
}

/// explain()'s verdict, then the empty line that ends the report.
inline void explain_verdict(const plan::Case& c, const plan::Plan& planned, std::FILE* out) {
  using plan::format_duration;
  const auto& one = planned.at(1);
  if (planned.distribute) {
    const auto& best = planned.at(planned.best_workers);
    std::fprintf(out,
                 "  verdict: distribute, on %d workers: %s including the set-up, against %s on "
                 "%s (speedup %.3g, communication %.0f%% of a step).\n\n",
                 planned.best_workers, format_duration(best.total_seconds).c_str(),
                 format_duration(one.total_seconds).c_str(), c.one_worker.c_str(), best.speedup,
                 100 * best.communication_share);
    return;
  }
  // The best distributed alternative: the N > 1 with the least total time.
  const plan::Prediction* other = verdict_workers(planned);
  if (other)
    std::fprintf(out,
                 "  verdict: do not distribute: %s on %s, against %s at best on %d workers "
                 "including the set-up (speedup %.3g, communication %.0f%% of a step).\n\n",
                 format_duration(one.total_seconds).c_str(), c.one_worker.c_str(),
                 format_duration(other->total_seconds).c_str(), other->workers, other->speedup,
                 100 * other->communication_share);
  else
    std::fprintf(out, "  verdict: do not distribute: only one worker was considered.\n\n");
}

}  // namespace detail

namespace plan {

/// Plans `c` (make_plan) and prints the report to `out`: the title and the
/// assumptions (with the nodes the bucket plan assumes), a table of the
/// predictions for N = 1, 2, 4, … workers, the fastest N and the largest,
/// the reasoning, the memory check and the batch advice when `c` asks for
/// them, the bucket plan (bucket size and sum algorithm), and the verdict,
/// then an empty line. Returns the plan. Throws gradsum::Error naming an
/// invalid field (the workload, network, budget and nodes are checked
/// before anything is printed, the memory needs and the noise scale when
/// their part is).
inline Plan explain(const Case& c, std::FILE* out = stdout) {
  const auto plan = make_plan(c.work, c.network, c.budget);
  c.nodes.validate();
  std::fprintf(out, "%s\n", c.title.c_str());
  for (const auto& a : c.assumptions) std::fprintf(out, "  assume %s\n", a.c_str());
  gradsum::detail::explain_nodes(c, out);
  gradsum::detail::explain_table(c, plan, out);
  gradsum::detail::explain_reasoning(c, plan, out);
  if (c.memory.device_bytes > 0) gradsum::detail::explain_memory(c.memory, out);
  if (c.noise_scale > 0) gradsum::detail::explain_batch(c, plan, out);
  gradsum::detail::explain_buckets(c, plan, out);
  gradsum::detail::explain_verdict(c, plan, out);
  return plan;
}

}  // namespace plan
}  // namespace gradsum
