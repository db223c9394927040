// SPDX-License-Identifier: Apache-2.0
#pragma once

// `gradsum-train --plan`: "should I distribute?" for the two classic cases
// or for a job described on the command line, answered by
// gradsum/plan/report.hpp. Needs neither Kokkos nor MPI.

#include "train_options.hpp"

#include <gradsum/plan/report.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace gradsum_plan {

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
    std::vector<gradsum::plan::Case> cases;
    gradsum::plan::Case job;
    job.title = "your job";
    job.work.epochs = 1;
    job.network = {1.25e9, 50e-6};
    job.budget.max_workers = 16;
    double parameters = -1, bytes_per_value = 4, weight_bytes = -1;
    bool custom = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& flag = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) gradsum::fail(flag, ": missing value");
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
        cases.push_back(gradsum::plan::reviews_case());
      } else if (flag == "llm") {
        cases.push_back(gradsum::plan::language_model_case());
      } else if (flag == "--samples") {
        job.work.samples_per_epoch = number();
      } else if (flag == "--batch") {
        job.work.batch = number();
      } else if (flag == "--seconds-per-sample") {
        job.work.seconds_per_sample = number();
      } else if (flag == "--parameters") {
        parameters = number();
        if (!(parameters >= 1)) gradsum::fail("--parameters: must be at least 1, got ", parameters);
      } else if (flag == "--bytes-per-value") {
        bytes_per_value = number();
        if (!(bytes_per_value > 0))
          gradsum::fail("--bytes-per-value: must be positive, got ", bytes_per_value);
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
        job.budget.setup_seconds = number() * gradsum::plan::seconds_per_hour;
      } else if (flag == "--runs") {
        job.budget.runs = number();
      } else if (flag == "--memory-gb") {
        job.memory.device_bytes = number() * 1e9;
        if (!(job.memory.device_bytes > 0))
          gradsum::fail("--memory-gb: must be positive, got ", args[i]);
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
          gradsum::fail("--noise-scale: must be positive, got ", args[i]);
      } else if (flag == "--per-worker-batch") {
        job.per_worker_batch = number();
        if (!(job.per_worker_batch >= 1))
          gradsum::fail("--per-worker-batch: must be at least 1, got ", args[i]);
      } else {
        gradsum::fail("--plan: unknown option '", flag, "' (see --plan --help)");
      }
    }
    if (custom) {
      if (!cases.empty())
        gradsum::fail("--plan: give either a case name or job options, not both");
      if (parameters < 0) gradsum::fail("--plan: --parameters P is required for a job");
      job.work.gradient_bytes = parameters * bytes_per_value;
      job.memory.parameters = parameters;
      job.memory.gradient_bytes = bytes_per_value;
      job.memory.weight_bytes = weight_bytes > 0 ? weight_bytes : bytes_per_value;
      if (job.per_worker_batch == 0) job.per_worker_batch = job.work.batch;
      if (job.memory.device_bytes > 0) job.memory.validate();
      job.assumptions = {
          "network: " + gradsum::plan::format_bytes(job.network.bandwidth) + "/s per worker, " +
          gradsum::plan::format_duration(job.network.latency) + " latency, ring allreduce"};
      job.work.validate();  // the flags' names are in the messages
      job.network.validate();
      job.budget.validate();
      cases.push_back(job);
    }
    if (cases.empty())
      cases = {gradsum::plan::reviews_case(), gradsum::plan::language_model_case()};
    for (const auto& c : cases) gradsum::plan::explain(c);
    return 0;
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train --plan: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace gradsum_plan
