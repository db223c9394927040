// SPDX-License-Identifier: Apache-2.0
#pragma once

// "Should I distribute?": the cost model of gradsum/plan applied to two
// classic cases, or to a job described on the command line, with the
// reasoning printed. Used by examples/should_i_distribute and by
// `gradsum-train --plan`. Needs neither Kokkos nor MPI.

#include "train_options.hpp"

#include <gradsum/plan/cost_model.hpp>
#include <gradsum/plan/strategy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gradsum_plan {

/// A job to decide about: the workload, the network, the budget, and the
/// assumptions behind the numbers, printed with the answer.
struct Case {
  std::string title;
  std::vector<std::string> assumptions;
  gradsum::plan::Workload work;
  gradsum::plan::Network network;
  gradsum::plan::Budget budget;
  std::string one_worker = "one worker";  // what one worker is, for the verdict
  std::string sample = "samples";         // what a sample is, for the batch advice
  // The memory check, when device_bytes > 0.
  gradsum::plan::MemoryNeeds memory;
  // The batch advice, when noise_scale > 0: workers x per_worker_batch.
  double noise_scale = 0;
  double per_worker_batch = 0;
};

constexpr double hour = 3600;
constexpr double day = 24 * hour;
constexpr double year = 365 * day;

/// (a) 50,000 movie reviews, a BERT-base-sized classifier fine-tuned in
/// 2.5 h on one GPU, ten machines on 10 Gb/s Ethernet, a week of set-up.
inline Case reviews() {
  Case c;
  c.title = "(a) 50,000 reviews, a model that trains in under three hours on one GPU, "
            "ten machines, a week of engineering set-up";
  c.work.samples_per_epoch = 50000;
  c.work.batch = 32;
  c.work.epochs = 3;
  // 2.5 h on one GPU for 3 epochs of 50,000 reviews: 0.06 s per review.
  c.work.seconds_per_sample = 2.5 * hour / (3 * 50000);
  c.work.gradient_bytes = 110e6 * 4;  // 110 M parameters, float32 gradients
  c.work.overhead_seconds = 0.005;
  c.network = {1.25e9, 50e-6};  // 10 Gb/s Ethernet, 50 us per message
  c.budget.max_workers = 10;
  c.budget.setup_seconds = 7 * day;  // one calendar week before the first run
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

/// (b) a 175-billion-parameter language model on 300 billion tokens
/// (about 1.2 TB of text), years on one accelerator.
inline Case language_model() {
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
  c.budget.setup_seconds = 90 * day;  // three months of engineering
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

/// A duration in the unit a person would use.
inline std::string duration(double s) {
  char text[64];
  if (s == 0) return "0";
  if (s < 1e-3) std::snprintf(text, sizeof text, "%.3g us", s * 1e6);
  else if (s < 1) std::snprintf(text, sizeof text, "%.3g ms", s * 1e3);
  else if (s < 120) std::snprintf(text, sizeof text, "%.3g s", s);
  else if (s < 2 * hour) std::snprintf(text, sizeof text, "%.3g min", s / 60);
  else if (s < 3 * day) std::snprintf(text, sizeof text, "%.3g h", s / hour);
  else if (s < year) std::snprintf(text, sizeof text, "%.3g days", s / day);
  else std::snprintf(text, sizeof text, "%.3g years", s / year);
  return text;
}

/// A byte count in the unit a person would use.
inline std::string size(double bytes) {
  char text[64];
  if (bytes < 1e6) std::snprintf(text, sizeof text, "%.3g kB", bytes / 1e3);
  else if (bytes < 1e9) std::snprintf(text, sizeof text, "%.3g MB", bytes / 1e6);
  else if (bytes < 1e12) std::snprintf(text, sizeof text, "%.3g GB", bytes / 1e9);
  else std::snprintf(text, sizeof text, "%.3g TB", bytes / 1e12);
  return text;
}

/// A count or ratio without an exponent below ten million: 1536, 9.5, 606.
inline std::string number(double x) {
  char text[64];
  if (x >= 1e7 || x != x) std::snprintf(text, sizeof text, "%.3g", x);
  else if (x >= 100 || x == std::floor(x)) std::snprintf(text, sizeof text, "%.0f", x);
  else std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

/// Prints the table for a few N, the reasoning and the verdict; returns
/// the plan.
inline gradsum::plan::Plan explain(const Case& c, std::FILE* out = stdout) {
  const auto plan = gradsum::plan::make_plan(c.work, c.network, c.budget);
  std::fprintf(out, "%s\n", c.title.c_str());
  for (const auto& a : c.assumptions) std::fprintf(out, "  assume %s\n", a.c_str());
  std::fprintf(out, "  %8s %11s %11s %11s %7s %9s %7s %12s\n", "workers", "step", "compute",
               "allreduce", "comm%", "speedup", "effic.", "one run");
  std::vector<int> shown;
  for (int n = 1; n < c.budget.max_workers; n *= 2) shown.push_back(n);
  for (int n : {plan.best_workers, c.budget.max_workers}) {
    bool seen = false;
    for (int s : shown) seen = seen || s == n;
    if (!seen) shown.push_back(n);
  }
  std::sort(shown.begin(), shown.end());
  for (int n : shown) {
    const auto& p = plan.at(n);
    std::fprintf(out, "  %8d %11s %11s %11s %6.1f%% %9.3g %6.1f%% %12s%s\n", n,
                 duration(p.step_seconds).c_str(), duration(p.compute_seconds).c_str(),
                 duration(p.communication_seconds).c_str(), 100 * p.communication_share,
                 p.speedup, 100 * p.efficiency, duration(p.training_seconds).c_str(),
                 n == plan.best_workers ? "  <- fastest" : "");
  }
  const auto& one = plan.at(1);
  const auto& best = plan.at(plan.best_workers);
  std::fprintf(out, "  reasoning:\n");
  std::fprintf(out, "    on %s a step takes %s and a training run %s.\n", c.one_worker.c_str(),
               duration(one.step_seconds).c_str(), duration(one.training_seconds).c_str());
  if (plan.best_workers > 1) {
    std::fprintf(out,
                 "    the fastest choice, %d workers, takes %s per step: speedup %.3g, efficiency "
                 "%.0f%%; the allreduce of %s is %.0f%% of the step.\n",
                 plan.best_workers, duration(best.step_seconds).c_str(), best.speedup,
                 100 * best.efficiency, size(c.work.gradient_bytes).c_str(),
                 100 * best.communication_share);
    std::fprintf(out, "    a run then takes %s, saving %s per run; the set-up of %s ",
                 duration(best.training_seconds).c_str(),
                 duration(one.training_seconds - best.training_seconds).c_str(),
                 duration(c.budget.setup_seconds).c_str());
    if (c.budget.setup_seconds > 0)
      std::fprintf(out, "pays back after %.3g run(s) (%.3g planned).\n", plan.break_even_runs,
                   c.budget.runs);
    else
      std::fprintf(out, "costs nothing.\n");
  } else {
    std::fprintf(out, "    no number of workers up to %d makes a step faster: communication "
                      "costs more than the computation it splits.\n",
                 c.budget.max_workers);
  }
  if (c.memory.device_bytes > 0) {
    const auto m = gradsum::plan::check_memory(c.memory);
    std::fprintf(out, "  memory per worker: weights %s + gradients %s + optimizer state %s + "
                      "activations %s = %s, against %s per device: %s.\n",
                 size(m.weights).c_str(), size(m.gradients).c_str(), size(m.optimizer).c_str(),
                 size(m.activations).c_str(), size(m.total).c_str(), size(m.device).c_str(),
                 m.total <= m.device ? "fits" : "does not fit");
    std::fprintf(out, "  strategy: %s", gradsum::plan::describe(m.strategy));
    switch (m.strategy) {
      case gradsum::plan::Strategy::data_parallel:
        std::fprintf(out, ": every worker holds the whole model.\n");
        break;
      case gradsum::plan::Strategy::optimizer_sharding:
        std::fprintf(out, " over at least %.0f workers: weights, gradients and activations fit, "
                          "the optimizer state of %s does not.\n",
                     m.devices, size(m.optimizer).c_str());
        break;
      case gradsum::plan::Strategy::sequence_parallel:
        std::fprintf(out, " over at least %.0f devices per sequence: the model state fits, the "
                          "activations of %s do not.\n",
                     m.devices, size(m.activations).c_str());
        break;
      case gradsum::plan::Strategy::model_parallel:
        std::fprintf(out, " over at least %.0f devices per copy of the model (%s against %s "
                          "each), then data parallelism across the copies.\n",
                     m.devices, size(m.total).c_str(), size(m.device).c_str());
        break;
    }
  }
  if (c.noise_scale > 0) {
    const double n = plan.distribute ? plan.best_workers : c.budget.max_workers;
    const auto a = gradsum::plan::advise_batch(c.noise_scale, c.per_worker_batch, n);
    std::fprintf(out,
                 "  batch: %s workers x %s = %s %s per step against a noise scale of %s: "
                 "%sx fewer steps than one worker (at most %sx with any number); useful up "
                 "to about %s workers%s; scale the learning rate %sx (linear rule) with a "
                 "warm-up over the first epochs.\n",
                 number(a.workers).c_str(), number(a.per_worker_batch).c_str(),
                 number(a.aggregate_batch).c_str(), c.sample.c_str(),
                 number(a.noise_scale).c_str(), number(a.step_reduction).c_str(),
                 number(a.max_step_reduction).c_str(), number(std::floor(a.useful_workers)).c_str(),
                 a.past_noise_scale ? " (this batch is past the noise scale: extra workers "
                                      "mostly cost samples)" : "",
                 number(a.learning_rate_scale).c_str());
  }
  if (plan.distribute) {
    std::fprintf(out,
                 "  verdict: distribute, on %d workers: %s including the set-up, against %s on "
                 "%s (speedup %.3g, communication %.0f%% of a step).\n\n",
                 plan.best_workers, duration(best.total_seconds).c_str(),
                 duration(one.total_seconds).c_str(), c.one_worker.c_str(), best.speedup,
                 100 * best.communication_share);
  } else {
    // The best distributed alternative: the N > 1 with the least total time.
    const gradsum::plan::Prediction* other = nullptr;
    for (const auto& p : plan.predictions)
      if (p.workers > 1 && (!other || p.total_seconds < other->total_seconds)) other = &p;
    if (other)
      std::fprintf(out,
                   "  verdict: do not distribute: %s on %s, against %s at best on %d workers "
                   "including the set-up (speedup %.3g, communication %.0f%% of a step).\n\n",
                   duration(one.total_seconds).c_str(), c.one_worker.c_str(),
                   duration(other->total_seconds).c_str(), other->workers, other->speedup,
                   100 * other->communication_share);
    else
      std::fprintf(out, "  verdict: do not distribute: only one worker was considered.\n\n");
  }
  return plan;
}

/// Help for `gradsum-train --plan`.
inline const char* usage() {
  return "usage: gradsum-train --plan [reviews|llm] [job options]\n"
         "\n"
         "Predicts step time, speedup, efficiency and communication share on\n"
         "N = 1 … K workers with a ring allreduce, and says whether distributing\n"
         "pays once a one-off set-up cost is counted. Without job options it\n"
         "answers two classic cases (both, or the one named). Job options:\n"
         "\n"
         "  --samples N             samples per epoch, samples_per_epoch (required)\n"
         "  --batch B               global batch size, batch (required)\n"
         "  --seconds-per-sample X  compute per sample on one worker, seconds_per_sample\n"
         "                          (required; measure it with gradsum::plan::calibrate)\n"
         "  --parameters P          parameters summed per step (required)\n"
         "  --bytes-per-value V     4 for float, 8 for double (default 4)\n"
         "  --epochs E              epochs per run (default 1)\n"
         "  --overhead X            fixed seconds per step, overhead_seconds (default 0)\n"
         "  --bandwidth X           bytes/s per worker (default 1.25e9, 10 Gb/s)\n"
         "  --latency X             seconds per message (default 50e-6)\n"
         "  --workers K             largest number of workers (default 16)\n"
         "  --setup-hours H         one-off set-up cost in hours (default 0)\n"
         "  --runs R                training runs sharing the set-up (default 1)\n"
         "  --memory-gb G           memory of one device: check that a worker holds the\n"
         "                          weights, gradients, optimizer state and activations,\n"
         "                          and name the parallelism the job needs\n"
         "  --weight-bytes W        bytes per weight (default --bytes-per-value)\n"
         "  --optimizer-bytes O     optimizer state per parameter (default 8: Adam)\n"
         "  --activation-gb A       activations of one worker's batch (default 0)\n"
         "  --long-sequences        the activations are those of long sequences\n"
         "  --noise-scale B         gradient noise scale (gradsum-train --noise-scale\n"
         "                          measures it): advise on the aggregate batch\n"
         "  --per-worker-batch b    samples per worker for that advice (default --batch)\n";
}

/// `gradsum-train --plan …` (arguments after --plan). Returns the exit
/// status: 0 answered, 2 bad command line.
inline int run(const std::vector<std::string>& args) {
  using gradsum_train::detail::parse_double;
  using gradsum_train::detail::parse_integer;
  try {
    std::vector<Case> cases;
    Case job;
    job.title = "your job";
    job.work.epochs = 1;
    job.network = {1.25e9, 50e-6};
    job.budget.max_workers = 16;
    double parameters = -1, bytes_per_value = 4, weight_bytes = -1;
    bool custom = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& flag = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) gradsum::detail::fail(flag, ": missing value");
        return args[++i];
      };
      auto number = [&]() {
        custom = true;
        return parse_double(flag, value());
      };
      if (flag == "--help" || flag == "-h") {
        std::fputs(usage(), stdout);
        return 0;
      } else if (flag == "reviews") {
        cases.push_back(reviews());
      } else if (flag == "llm") {
        cases.push_back(language_model());
      } else if (flag == "--samples") {
        job.work.samples_per_epoch = number();
      } else if (flag == "--batch") {
        job.work.batch = number();
      } else if (flag == "--seconds-per-sample") {
        job.work.seconds_per_sample = number();
      } else if (flag == "--parameters") {
        parameters = number();
        if (!(parameters >= 1)) gradsum::detail::fail("--parameters: must be at least 1, got ", parameters);
      } else if (flag == "--bytes-per-value") {
        bytes_per_value = number();
        if (!(bytes_per_value > 0))
          gradsum::detail::fail("--bytes-per-value: must be positive, got ", bytes_per_value);
      } else if (flag == "--epochs") {
        job.work.epochs = number();
      } else if (flag == "--overhead") {
        job.work.overhead_seconds = number();
      } else if (flag == "--bandwidth") {
        job.network.bandwidth = number();
      } else if (flag == "--latency") {
        job.network.latency = number();
      } else if (flag == "--workers") {
        custom = true;
        job.budget.max_workers = int(parse_integer(flag, value(), 1, 1000000));
      } else if (flag == "--setup-hours") {
        job.budget.setup_seconds = number() * hour;
      } else if (flag == "--runs") {
        job.budget.runs = number();
      } else if (flag == "--memory-gb") {
        job.memory.device_bytes = number() * 1e9;
        if (!(job.memory.device_bytes > 0))
          gradsum::detail::fail("--memory-gb: must be positive, got ", args[i]);
      } else if (flag == "--weight-bytes") {
        weight_bytes = number();
      } else if (flag == "--optimizer-bytes") {
        job.memory.optimizer_bytes = number();
      } else if (flag == "--activation-gb") {
        job.memory.activation_bytes = number() * 1e9;
      } else if (flag == "--long-sequences") {
        custom = true;
        job.memory.long_sequences = true;
      } else if (flag == "--noise-scale") {
        job.noise_scale = number();
        if (!(job.noise_scale > 0))
          gradsum::detail::fail("--noise-scale: must be positive, got ", args[i]);
      } else if (flag == "--per-worker-batch") {
        job.per_worker_batch = number();
        if (!(job.per_worker_batch >= 1))
          gradsum::detail::fail("--per-worker-batch: must be at least 1, got ", args[i]);
      } else {
        gradsum::detail::fail("--plan: unknown option '", flag, "' (see --plan --help)");
      }
    }
    if (custom) {
      if (!cases.empty())
        gradsum::detail::fail("--plan: give either a case name or job options, not both");
      if (parameters < 0) gradsum::detail::fail("--plan: --parameters P is required for a job");
      job.work.gradient_bytes = parameters * bytes_per_value;
      job.memory.parameters = parameters;
      job.memory.gradient_bytes = bytes_per_value;
      job.memory.weight_bytes = weight_bytes > 0 ? weight_bytes : bytes_per_value;
      if (job.per_worker_batch == 0) job.per_worker_batch = job.work.batch;
      if (job.memory.device_bytes > 0) job.memory.validate();
      job.assumptions = {
          "network: " + size(job.network.bandwidth) + "/s per worker, " +
          duration(job.network.latency) + " latency, ring allreduce"};
      job.work.validate();  // the flags' names are in the messages
      job.network.validate();
      job.budget.validate();
      cases.push_back(job);
    }
    if (cases.empty()) cases = {reviews(), language_model()};
    for (const auto& c : cases) explain(c);
    return 0;
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train --plan: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace gradsum_plan
