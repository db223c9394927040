// SPDX-License-Identifier: Apache-2.0
#pragma once

// What gradsum-train can be told (its flags are in flags.hpp), without
// Kokkos, so that the parser can be tested and fuzzed on its own.

#include "../common/flag_table.hpp"

#include <gradsum/data/lines.hpp>
#include <gradsum/optimizer/schedule.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsum_train {

/// The optimizers --optimizer names: the first-order ones (FirstOrder picks
/// among them at run time), then those that evaluate the objective more
/// than once per step or need its Hessian (LineSearchMethod).
enum class Optimizer { sgd, momentum, nesterov, adagrad, rmsprop, adam, adamw, newton, steepest, lbfgs };

/// The optimizers' names, in the order of Optimizer.
inline const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {
      "sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adam", "adamw", "newton", "steepest", "lbfgs"};
  return names;
}

inline bool is_first_order(Optimizer m) { return m < Optimizer::newton; }

inline const std::string& name(Optimizer m) { return optimizer_names()[std::size_t(m)]; }

/// The names of the first-order optimizers, those that train an MLP.
inline std::vector<std::string> first_order_names() {
  std::vector<std::string> names = optimizer_names();
  names.resize(std::size_t(Optimizer::newton));
  return names;
}

/// Everything gradsum-train can be told.
struct Options {
  std::string data;
  std::string text;                // --text: a GPT's characters (instead of --data)
  std::string model = "logistic";  // linear | logistic | softmax | mlp | gpt
  int gpt_layers = 0, gpt_heads = 0, gpt_width = 0, gpt_context = 0;  // --model gpt:…
  std::string precision;           // gpt: float (default) | double
  std::vector<int> hidden;          // mlp: hidden layer widths
  std::string loss;                 // mlp: squared | logistic | softmax (default softmax)
  std::string activation = "relu";  // mlp: hidden activation
  std::string mlp_path = "auto";    // mlp, softmax: auto | matrix | per-sample
  std::string init = "glorot";      // mlp: initializer
  double clip_norm = 0;             // > 0: clip the gradient norm of first-order updates
  bool diagnostics = false;         // mlp: per-layer gradient health every epoch
  double test_fraction = 0;         // rows held out for a final test score
  Optimizer optimizer = Optimizer::sgd;
  double lr = 0.1;
  bool lr_given = false;  // otherwise the optimizer's own default (SGD: 0.1)
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = -1;           // < 0: the optimizer's default
  double weight_decay = -1;  // < 0: the optimizer's default
  std::string schedule = "constant";
  std::int64_t warmup = 0;
  std::string line_search;  // empty: the optimizer's default
  int history = 10;
  std::int64_t max_steps = 0;
  double grad_tol = 0;
  double loss_tol = 0;
  bool skip_nonfinite = false;    // --on-nonfinite skip
  std::string reduce = "sum";     // sum | compensated | reproducible
  std::string aggregate = "sum";  // sum | median | trimmed | clip (knob below)
  int trimmed_k = 0;              // --aggregate trimmed:K
  double clip_c = 0;              // --aggregate clip:C
  int workers = 4;                // virtual workers of a robust aggregate on one rank
  std::int64_t bucket_cap = -1;   // --bucket-cap: bytes per bucket, 0 = one message, -1 = auto
  std::string sum_algorithm = "auto";  // --sum-algorithm: auto | flat | two-level
  int ranks_per_node = 0;         // --ranks-per-node: 0 = the ranks sharing memory
  bool shard_optimizer = false;   // --shard-optimizer: ZeRO stage 1
  int epochs = 10;
  std::int64_t batch = 0;  // 0 = full batch
  double l2 = 0.0;
  std::uint64_t seed = 0;
  bool standardize = false;
  std::string space;  // empty = Kokkos' default execution space
  int target_column = -1;
  std::int64_t max_values = gradsum::default_max_values;  // --max-values: the table's bound
  std::string save_params;
  std::string save_model;   // --save-model: the model as safetensors
  std::string init_params;  // --init-params: starting parameters (safetensors or text)
  std::string progress = "auto";      // auto | on | off
  std::string log;                    // CSV log of every update
  std::string checkpoint;             // checkpoint file, written at the end
  std::int64_t checkpoint_every = 0;  // and every K epochs
  std::string resume;                 // checkpoint to continue from
  std::int64_t early_stop = 0;        // patience in epochs, 0 = off
  int accumulate = 1;                 // mini-batches summed per update
  int noise_parts = 0;                // --noise-scale: workers measured per rank, 0 = off
  bool watch_workers = false;         // --watch-workers: name outlier workers every step
  double validation = 0;              // fraction of rows held out, 0 = none
  bool print_gradient = false;
  bool duplicates = false;  // --duplicates: list conflicting duplicate rows first
  // --suspects K, --suspects-out FILE: after training, the K training rows
  // whose target looks wrong (0 = off), printed and optionally as CSV.
  std::int64_t suspects = 0;
  std::string suspects_out;
  bool help = false;
};

/// A --schedule value: constant, step:EVERY:GAMMA, exp:GAMMA or
/// cosine:TOTAL[:MIN]; throws naming the flag on anything else.
inline gradsum::Schedule parse_schedule(const std::string& text) {
  using gradsum_apps::parse_double;
  using gradsum_apps::parse_integer;
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const std::string flag = "--schedule";
  gradsum::Schedule schedule;
  if (parts[0] == "constant" && parts.size() == 1) {
    schedule = gradsum::Schedule::constant();
  } else if (parts[0] == "step" && parts.size() == 3) {
    schedule = gradsum::Schedule::step_decay(parse_integer(flag, parts[1], 1, INT64_MAX),
                                             parse_double(flag, parts[2]));
  } else if (parts[0] == "exp" && parts.size() == 2) {
    schedule = gradsum::Schedule::exponential(parse_double(flag, parts[1]));
  } else if (parts[0] == "cosine" && (parts.size() == 2 || parts.size() == 3)) {
    schedule = gradsum::Schedule::cosine(parse_integer(flag, parts[1], 1, INT64_MAX),
                                         parts.size() == 3 ? parse_double(flag, parts[2]) : 0.0);
  } else {
    gradsum::fail("--schedule: expected constant, step:EVERY:GAMMA, exp:GAMMA or "
                  "cosine:TOTAL[:MIN], got '", text, "'");
  }
  try {
    schedule.validate();
  } catch (const gradsum::Error& e) {
    gradsum::fail("--schedule: ", e.what());
  }
  return schedule;
}

/// An --model gpt:layers=L,heads=H,width=C,context=T description: every
/// key once, positive integers, width divisible by heads.
inline void parse_gpt(const std::string& text, Options& o) {
  const std::string flag = "--model gpt:";
  int* fields[] = {&o.gpt_layers, &o.gpt_heads, &o.gpt_width, &o.gpt_context};
  const char* keys[] = {"layers", "heads", "width", "context"};
  for (int* f : fields) *f = 0;
  for (std::size_t start = 0;;) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma - start);
    const auto equals = item.find('=');
    int k = 0;
    while (k < 4 && item.substr(0, equals) != keys[k]) ++k;
    if (equals == std::string::npos || k == 4 || *fields[k] != 0)
      gradsum::fail(flag, " expected layers=L,heads=H,width=C,context=T (each once), got '",
                    text, "'");
    *fields[k] = int(gradsum_apps::parse_integer(flag + keys[k], item.substr(equals + 1), 1, 65536));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (int k = 0; k < 4; ++k)
    if (*fields[k] == 0) gradsum::fail(flag, " lacks ", keys[k], "= in '", text, "'");
  if (o.gpt_width % o.gpt_heads != 0)
    gradsum::fail(flag, " width ", o.gpt_width, " is not divisible by heads ", o.gpt_heads);
}

/// An --model mlp:H1,H2,… width list: positive integers separated by commas.
inline std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> widths;
  for (std::size_t start = 0;;) {
    const auto comma = text.find(',', start);
    widths.push_back(int(gradsum_apps::parse_integer(
        "--model mlp:", text.substr(start, comma - start), 1, 1000000)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return widths;
}

}  // namespace gradsum_train
