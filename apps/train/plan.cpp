// SPDX-License-Identifier: Apache-2.0
// gradsum-train --plan: its flags, one table (common/flag_table.hpp), and the
// job they describe.

#include "plan.hpp"

#include "../common/flag_table.hpp"

#include <gradsum/plan/report.hpp>

#include <cstdio>

namespace gradsum_train {
namespace {

using gradsum_apps::Value;

// What --plan can be told: case names, or a job.
struct PlanOptions {
  std::vector<gradsum::plan::Case> cases;
  gradsum::plan::Case job = [] {
    gradsum::plan::Case c;
    c.title = "your job";
    c.work.epochs = 1;
    c.network = {1.25e9, 50e-6};
    c.budget.max_workers = 16;
    return c;
  }();
  double parameters = -1, bytes_per_value = 4, weight_bytes = -1;
  bool custom = false;  // a job option was given
  bool help = false;
};

// A job option's number.
double number(PlanOptions& o, const Value& v) {
  o.custom = true;
  return v.number();
}

// `check` is false: the value is refused, as the user spelled it.
void require(bool check, const Value& v, const char* what) {
  if (!check) gradsum::fail(v.flag, ": must be ", what, ", got ", v.text);
}

using O = PlanOptions;
const std::vector<gradsum_apps::Flag<PlanOptions>> plan_flags = {
    {"reviews", "", "", [](O& o, const Value&) { o.cases.push_back(gradsum::plan::reviews_case()); }},
    {"llm", "", "", [](O& o, const Value&) { o.cases.push_back(gradsum::plan::language_model_case()); }},
    {"--samples", "N", "samples per epoch, samples_per_epoch (required)",
     [](O& o, const Value& v) { o.job.work.samples_per_epoch = number(o, v); }},
    {"--batch", "B", "global batch size, batch (required)",
     [](O& o, const Value& v) { o.job.work.batch = number(o, v); }},
    {"--seconds-per-sample", "X",
     "compute per sample on one worker, seconds_per_sample\n"
     "(required; measure it with gradsum::plan::calibrate)",
     [](O& o, const Value& v) { o.job.work.seconds_per_sample = number(o, v); }},
    {"--parameters", "P", "parameters summed per step (required)",
     [](O& o, const Value& v) {
       o.parameters = number(o, v);
       if (!(o.parameters >= 1)) gradsum::fail(v.flag, ": must be at least 1, got ", o.parameters);
     }},
    {"--bytes-per-value", "V", "4 for float, 8 for double (default 4)",
     [](O& o, const Value& v) {
       o.bytes_per_value = number(o, v);
       if (!(o.bytes_per_value > 0))
         gradsum::fail(v.flag, ": must be positive, got ", o.bytes_per_value);
     }},
    {"--epochs", "E", "epochs per run (default 1)",
     [](O& o, const Value& v) { o.job.work.epochs = number(o, v); }},
    {"--overhead", "X", "fixed seconds per step, overhead_seconds (default 0)",
     [](O& o, const Value& v) { o.job.work.overhead_seconds = number(o, v); }},
    {"--bandwidth", "X", "bytes/s per worker (default 1.25e9, 10 Gb/s)",
     [](O& o, const Value& v) { o.job.network.bandwidth = number(o, v); }},
    {"--latency", "X", "seconds per message (default 50e-6)",
     [](O& o, const Value& v) { o.job.network.latency = number(o, v); }},
    {"--ranks-per-node", "L",
     "ranks on one node, for the two-level sum of the bucket\n"
     "plan (default 8)",
     [](O& o, const Value& v) { o.job.nodes.ranks_per_node = int(v.integer(1, 1000000)); }},
    {"--node-bandwidth", "X", "bytes/s per rank inside a node (default 50e9)",
     [](O& o, const Value& v) {
       o.job.nodes.link.bandwidth = number(o, v);
       require(o.job.nodes.link.bandwidth > 0, v, "positive");
     }},
    {"--workers", "K", "largest number of workers (default 16)",
     [](O& o, const Value& v) {
       o.custom = true;
       o.job.budget.max_workers = int(v.integer(1, 1000000));
     }},
    {"--setup-hours", "H", "one-off set-up cost in hours (default 0)",
     [](O& o, const Value& v) {
       o.job.budget.setup_seconds = number(o, v) * gradsum::plan::seconds_per_hour;
     }},
    {"--runs", "R", "training runs sharing the set-up (default 1)",
     [](O& o, const Value& v) { o.job.budget.runs = number(o, v); }},
    {"--memory-gb", "G",
     "memory of one device: check that a worker holds the\n"
     "weights, gradients, optimizer state and activations,\n"
     "and name the parallelism the job needs",
     [](O& o, const Value& v) {
       o.job.memory.device_bytes = number(o, v) * 1e9;
       require(o.job.memory.device_bytes > 0, v, "positive");
     }},
    {"--weight-bytes", "W", "bytes per weight (default --bytes-per-value)",
     [](O& o, const Value& v) { o.weight_bytes = number(o, v); }},
    {"--optimizer-bytes", "O", "optimizer state per parameter (default 8: Adam)",
     [](O& o, const Value& v) { o.job.memory.optimizer_bytes = number(o, v); }},
    {"--activation-gb", "A", "activations of one worker's batch (default 0)",
     [](O& o, const Value& v) { o.job.memory.activation_bytes = number(o, v) * 1e9; }},
    {"--long-sequences", "", "the activations are those of long sequences",
     [](O& o, const Value&) {
       o.custom = true;
       o.job.memory.long_sequences = true;
     }},
    {"--noise-scale", "B",
     "gradient noise scale (gradsum-train --noise-scale\n"
     "measures it): advise on the aggregate batch",
     [](O& o, const Value& v) {
       o.job.noise_scale = number(o, v);
       require(o.job.noise_scale > 0, v, "positive");
     }},
    {"--per-worker-batch", "b", "samples per worker for that advice (default --batch)",
     [](O& o, const Value& v) {
       o.job.per_worker_batch = number(o, v);
       require(o.job.per_worker_batch >= 1, v, "at least 1");
     }},
    {"--help", "", "", [](O& o, const Value&) { o.help = true; }},
    {"-h", "", "", [](O& o, const Value&) { o.help = true; }},
};

std::string plan_usage() {
  return "usage: gradsum-train --plan [reviews|llm] [job options]\n"
         "\n"
         "Predicts step time, speedup, efficiency and communication share on\n"
         "N = 1 … K workers with a ring allreduce, and says whether distributing\n"
         "pays once a one-off set-up cost is counted; then the bucket size and\n"
         "sum (flat or two-level) that hide the most communication behind the\n"
         "backward pass. Without job options it\n"
         "answers two classic cases (both, or the one named). Job options:\n"
         "\n" +
         gradsum_apps::describe_flags(plan_flags, 26);
}

// The job the options describe, checked (the flags' names are in the messages).
gradsum::plan::Case job_of(const PlanOptions& o) {
  if (!o.cases.empty()) gradsum::fail("--plan: give either a case name or job options, not both");
  if (o.parameters < 0) gradsum::fail("--plan: --parameters P is required for a job");
  gradsum::plan::Case job = o.job;
  job.work.gradient_bytes = o.parameters * o.bytes_per_value;
  job.memory.parameters = o.parameters;
  job.memory.gradient_bytes = o.bytes_per_value;
  job.memory.weight_bytes = o.weight_bytes > 0 ? o.weight_bytes : o.bytes_per_value;
  if (job.per_worker_batch == 0) job.per_worker_batch = job.work.batch;
  if (job.memory.device_bytes > 0) job.memory.validate();
  job.assumptions = {"network: " + gradsum::plan::format_bytes(job.network.bandwidth) +
                     "/s per worker, " + gradsum::plan::format_duration(job.network.latency) +
                     " latency, ring allreduce"};
  job.work.validate();
  job.network.validate();
  job.budget.validate();
  return job;
}

}  // namespace

int run_plan(const std::vector<std::string>& args) {
  try {
    PlanOptions o;
    gradsum_apps::parse_flags(plan_flags, args, o, {"--plan: ", "--plan --help", true});
    if (o.help) {
      std::fputs(plan_usage().c_str(), stdout);
      return 0;
    }
    std::vector<gradsum::plan::Case> cases = o.cases;
    if (o.custom) cases.push_back(job_of(o));
    if (cases.empty()) cases = {gradsum::plan::reviews_case(), gradsum::plan::language_model_case()};
    for (const auto& c : cases) gradsum::plan::explain(c);
    return 0;
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train --plan: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace gradsum_train
