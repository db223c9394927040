// SPDX-License-Identifier: Apache-2.0
#pragma once

// Command-line options of gradsum-train, parsed without Kokkos so the
// parser can be tested (and fuzzed) on its own.

#include <gradsum/core/error.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/data/lines.hpp>
#include <gradsum/optimizer/schedule.hpp>

#include <algorithm>
#include <iterator>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace gradsum_train {

/// Everything gradsum-train can be told.
struct Options {
  std::string data;
  std::string model = "logistic";  // linear | logistic | softmax | mlp
  std::vector<int> hidden;          // mlp: hidden layer widths
  std::string loss;                 // mlp: squared | logistic | softmax (default softmax)
  std::string activation = "relu";  // mlp: hidden activation
  std::string mlp_path = "auto";  // mlp, softmax: auto | matrix | per-sample
  std::string init = "glorot";      // mlp: initializer
  double clip_norm = 0;             // > 0: clip the gradient norm of first-order updates
  bool diagnostics = false;         // mlp: per-layer gradient health every epoch
  double test_fraction = 0;         // rows held out for a final test score
  std::string optimizer = "sgd";
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
  bool skip_nonfinite = false;  // --on-nonfinite skip
  std::string reduce = "sum";     // sum | compensated | reproducible
  std::string aggregate = "sum";  // sum | median | trimmed | clip (knob below)
  int trimmed_k = 0;              // --aggregate trimmed:K
  double clip_c = 0;              // --aggregate clip:C
  int workers = 4;                // virtual workers of a robust aggregate on one rank
  int epochs = 10;
  std::int64_t batch = 0;  // 0 = full batch
  double l2 = 0.0;
  std::uint64_t seed = 0;
  bool standardize = false;
  std::string space;  // empty = Kokkos' default execution space
  int target_column = -1;
  std::int64_t max_values = gradsum::default_max_values;  // --max-values: the table's bound
  std::string save_params;
  std::string progress = "auto";  // auto | on | off
  std::string log;                // CSV log of every update
  std::string checkpoint;         // checkpoint file, written at the end
  std::int64_t checkpoint_every = 0;  // and every K epochs
  std::string resume;             // checkpoint to continue from
  std::int64_t early_stop = 0;    // patience in epochs, 0 = off
  int accumulate = 1;             // mini-batches summed per update
  int noise_parts = 0;            // --noise-scale: workers measured per rank, 0 = off
  bool watch_workers = false;     // --watch-workers: name outlier workers every step
  double validation = 0;          // fraction of rows held out, 0 = none
  bool print_gradient = false;
  bool duplicates = false;  // --duplicates: list conflicting duplicate rows first
  // --suspects K, --suspects-out FILE: after training, the K training rows
  // whose target looks wrong (0 = off), printed and optionally as CSV.
  std::int64_t suspects = 0;
  std::string suspects_out;
  bool help = false;
};

inline const char* usage() {
  return "usage: gradsum-train --data FILE [options]\n"
         "\n"
         "Trains a model on a numeric CSV file (optional header row, target in\n"
         "the last column, as numbers or class names) by data-parallel gradient\n"
         "descent.\n"
         "\n"
         "  --data FILE            the CSV file (required)\n"
         "  --target-column K      0-based column of the target (default: last)\n"
         "  --max-values N         refuse a data file of more than N feature values\n"
         "                         (default 2^28, 2 GiB as doubles): a gzip file can\n"
         "                         expand a thousandfold\n"
         "  --model M              linear | logistic | softmax | mlp:H1,H2,… (hidden\n"
         "                         layer widths; default logistic)\n"
         "  --loss L               mlp: squared | logistic | softmax (default softmax)\n"
         "  --activation A         mlp: relu | tanh | sigmoid | identity (default relu)\n"
         "  --mlp-path P           mlp, softmax: auto (default: matrix, but softmax of at\n"
         "                         most 16 classes on CPU threads takes blocks of samples),\n"
         "                         matrix (each layer over the batch in matrix products,\n"
         "                         with --reduce sum) or per-sample\n"
         "  --init I               mlp: glorot | glorot_normal | he | he_uniform |\n"
         "                         uniform[:A] | normal[:S] | zeros | constant:V\n"
         "                         (default glorot; seeded by --seed)\n"
         "  --diagnostics          mlp: per-layer gradient and parameter norms every\n"
         "                         epoch, with warnings (vanishing, exploding, symmetric units)\n"
         "  --clip-norm C          clip the gradient to norm C > 0 before each update\n"
         "                         (first-order optimizers)\n"
         "  --test-fraction F      hold out a seeded fraction F in [0, 1) of the rows; the\n"
         "                         final line ends with test_accuracy= or test_loss=\n"
         "  --optimizer NAME       sgd | momentum | nesterov | adagrad | rmsprop | adam |\n"
         "                         adamw | newton | steepest | lbfgs (default sgd)\n"
         "  --lr X                 learning rate > 0 (default 0.1 for sgd, else the\n"
         "                         optimizer's own: adam 0.001, newton 1 …)\n"
         "  --momentum X           momentum, nesterov: coefficient in [0, 1) (0.9)\n"
         "  --beta1 X, --beta2 X   adam, adamw: moment decays in [0, 1) (0.9, 0.999)\n"
         "  --eps X                adagrad, rmsprop, adam, adamw: denominator term > 0\n"
         "  --weight-decay X       adam, adamw: decoupled decay >= 0 (adamw 0.01)\n"
         "  --schedule S           learning rate of first-order methods: constant,\n"
         "                         step:EVERY:GAMMA, exp:GAMMA, cosine:TOTAL[:MIN]\n"
         "  --warmup N             linear warm-up over the first N steps\n"
         "  --line-search L        steepest: armijo | exact; lbfgs: wolfe | armijo\n"
         "  --history M            lbfgs: pairs kept, >= 1 (10)\n"
         "  --max-steps N          stop after N steps (0 = no limit)\n"
         "  --grad-tol X           stop when the gradient norm is <= X\n"
         "  --loss-tol X           stop when the objective changes by <= X relatively\n"
         "  --on-nonfinite A       throw (default: stop with the rank and sample) or skip\n"
         "                         (leave the parameters, count the step as skipped)\n"
         "  --reduce R             sum (default) | compensated | reproducible: how each\n"
         "                         process sums its samples' gradients (reproducible: the\n"
         "                         same bits for any thread count, backend and rank count)\n"
         "  --aggregate A          sum (default) | median | trimmed:K | clip:C: how workers'\n"
         "                         gradients combine; robust rules resist a corrupted\n"
         "                         worker (median needs 3 or more workers; trimmed drops\n"
         "                         the K largest and smallest values per coordinate,\n"
         "                         2K < workers; clip scales each worker's\n"
         "                         summed gradient to norm <= C > 0). The workers are the\n"
         "                         MPI ranks, or with one rank --workers parts of each batch\n"
         "  --workers W            virtual workers per batch on one rank, >= 1 (default 4;\n"
         "                         used only by a robust --aggregate)\n"
         "  --epochs E             passes over the data, >= 0 (default 10)\n"
         "  --batch B              mini-batch size, 0 = full batch (default 0)\n"
         "  --l2 X                 L2 penalty >= 0 on weights (default 0)\n"
         "  --seed S               seed of the mini-batch order, the test split and the\n"
         "                         initial parameters (default 0)\n"
         "  --standardize          scale features to mean 0, deviation 1\n"
         "  --space NAME           Kokkos execution space, e.g. serial, openmp\n"
         "  --save-params FILE     write the parameters, one per line ('-': standard\n"
         "                         output)\n"
         "  --progress P           auto (a bar on a terminal, else one line per epoch),\n"
         "                         on (always the bar) or off (default auto)\n"
         "  --log FILE.csv         log step, epoch, loss, gradient norm, learning rate\n"
         "                         ('-': standard output)\n"
         "  --checkpoint FILE      write a checkpoint when training ends (and see below)\n"
         "  --checkpoint-every K   also write it every K epochs\n"
         "  --resume FILE          continue from a checkpoint; --epochs counts the total\n"
         "  --validation F         hold out the fraction F of the rows (a split seeded by\n"
         "                         --seed) and report their objective every epoch\n"
         "  --early-stop P         stop when the validation objective (else the training\n"
         "                         objective) has not improved for P epochs, and keep\n"
         "                         the best parameters\n"
         "  --accumulate K         sum K mini-batches per update, one message (default 1)\n"
         "  --noise-scale K        measure K workers per rank (K parts of every rank's\n"
         "                         batch; with --accumulate, its micro-batches): the\n"
         "                         spread of their losses and the gradient noise scale,\n"
         "                         printed at the end and written by --log\n"
         "  --watch-workers        compare the workers' gradients every step (the ranks,\n"
         "                         or with one rank --workers parts of each batch; with\n"
         "                         --accumulate, its micro-batches; with --noise-scale K,\n"
         "                         its K parts), print 'outlier worker=W step=S ratio=X'\n"
         "                         for those more than 3 times as far from the workers'\n"
         "                         centre as the typical one, and a summary per worker at\n"
         "                         the end; needs 3 workers or more\n"
         "  --print-gradient       print the objective and its gradient at the starting\n"
         "                         parameters (zero; an MLP's initialized ones), or with\n"
         "                         --resume FILE at the checkpoint's, one value per line,\n"
         "                         and exit\n"
         "  --duplicates           list the groups of rows with identical features and\n"
         "                         different targets (file rows, from 1), then train\n"
         "  --suspects K           after training, print the K training rows whose target\n"
         "                         looks wrong, most suspicious first: the lowest margin\n"
         "                         averaged over the epochs (docs/bad-data.md)\n"
         "  --suspects-out FILE    also write them as CSV (row,target,predicted,score;\n"
         "                         '-': standard output)\n"
         "  --help                 this text\n"
         "\n"
         "Threads: unless OMP_NUM_THREADS, KOKKOS_NUM_THREADS or --kokkos-threads=N\n"
         "says otherwise, each process takes its cores divided by the ranks on its\n"
         "node (the first line of output says how many).\n"
         "\n"
         "Files written (--save-params, --log, --checkpoint) replace their target only\n"
         "once complete, through a temporary file beside it; a symbolic link keeps\n"
         "pointing at the updated file; a FIFO or device is written in place.\n"
         "\n"
         "gradsum-train --plan [--help] predicts whether distributing a job pays.\n";
}

namespace detail {

inline double parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  // ERANGE also marks a subnormal result, which is finite and kept.
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    gradsum::fail(flag, ": expected a finite number, got '", text, "'");
  if (errno == ERANGE && v == 0)
    gradsum::fail(flag, ": '", text, "' is too close to 0 to be represented (it would be 0)");
  return v;
}

inline std::int64_t parse_integer(const std::string& flag, const std::string& text,
                                  std::int64_t lo, std::int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    gradsum::fail(flag, ": expected an integer in [", lo, ", ", hi,
                  "], got '", text, "'");
  return v;
}

// --suspects K (K >= 1 rows) and --suspects-out FILE.
inline void parse_suspects(const std::string& flag, const std::string& text, Options& o) {
  if (flag == "--suspects-out") {
    o.suspects_out = text;
    if (o.suspects_out.empty()) gradsum::fail("--suspects-out: empty file name");
    return;
  }
  o.suspects = parse_integer(flag, text, 0, INT64_MAX);
  if (o.suspects == 0)
    gradsum::fail("--suspects: expected the number of rows to report, at least 1, got 0");
}

inline void check_suspects(const Options& o) {
  if (!o.suspects_out.empty() && o.suspects == 0)
    gradsum::fail("--suspects-out: needs --suspects K (how many rows to write)");
  if (o.suspects > 0 && o.print_gradient)
    gradsum::fail("--suspects: ranks rows after training, but --print-gradient does not train");
}

}  // namespace detail

/// A --schedule value: constant, step:EVERY:GAMMA, exp:GAMMA or
/// cosine:TOTAL[:MIN]; throws naming the flag on anything else.
inline gradsum::Schedule parse_schedule(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
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
    schedule = gradsum::Schedule::step_decay(detail::parse_integer(flag, parts[1], 1, INT64_MAX),
                                             detail::parse_double(flag, parts[2]));
  } else if (parts[0] == "exp" && parts.size() == 2) {
    schedule = gradsum::Schedule::exponential(detail::parse_double(flag, parts[1]));
  } else if (parts[0] == "cosine" && (parts.size() == 2 || parts.size() == 3)) {
    schedule = gradsum::Schedule::cosine(detail::parse_integer(flag, parts[1], 1, INT64_MAX),
                                         parts.size() == 3 ? detail::parse_double(flag, parts[2]) : 0.0);
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

/// An --model mlp:H1,H2,… width list: positive integers separated by commas.
inline std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> widths;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    widths.push_back(int(detail::parse_integer("--model mlp:", text.substr(start, comma - start),
                                               1, 1000000)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return widths;
}

/// Parses the arguments (program name excluded). Throws gradsum::Error
/// naming the flag and the value on anything it cannot accept. Arguments
/// starting with --kokkos- are left to Kokkos.
inline Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) gradsum::fail(flag, ": missing value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--data") {
      o.data = value();
    } else if (flag == "--model") {
      o.model = value();
      if (o.model.rfind("mlp:", 0) == 0) {
        o.hidden = parse_widths(o.model.substr(4));
        o.model = "mlp";
      } else if (o.model != "linear" && o.model != "logistic" && o.model != "softmax") {
        gradsum::fail("--model: expected linear, logistic, softmax or mlp:H1,H2,…, got '",
                      o.model, "'");
      }
    } else if (flag == "--loss") {
      o.loss = value();
      if (o.loss != "squared" && o.loss != "logistic" && o.loss != "softmax")
        gradsum::fail("--loss: expected squared, logistic or softmax, got '", o.loss, "'");
    } else if (flag == "--mlp-path") {
      o.mlp_path = value();
      if (o.mlp_path != "auto" && o.mlp_path != "matrix" && o.mlp_path != "per-sample")
        gradsum::fail("--mlp-path: expected auto, matrix or per-sample, got '", o.mlp_path, "'");
    } else if (flag == "--activation") {
      o.activation = value();  // checked by gradsum-train with the library's parser
    } else if (flag == "--init") {
      o.init = value();  // checked by gradsum-train with the library's parser
    } else if (flag == "--clip-norm") {
      o.clip_norm = detail::parse_double(flag, value());
      if (!(o.clip_norm > 0)) gradsum::fail("--clip-norm: must be positive, got ", o.clip_norm);
    } else if (flag == "--diagnostics") {
      o.diagnostics = true;
    } else if (flag == "--test-fraction") {
      o.test_fraction = detail::parse_double(flag, value());
      if (!(o.test_fraction >= 0 && o.test_fraction < 1))
        gradsum::fail("--test-fraction: must be in [0, 1), got ", o.test_fraction);
    } else if (flag == "--optimizer") {
      o.optimizer = value();
      static const char* known[] = {"sgd",  "momentum", "nesterov", "adagrad",  "rmsprop",
                                    "adam", "adamw",    "newton",   "steepest", "lbfgs"};
      if (std::find(std::begin(known), std::end(known), o.optimizer) == std::end(known))
        gradsum::fail("--optimizer: expected sgd, momentum, nesterov, adagrad, rmsprop, "
                      "adam, adamw, newton, steepest or lbfgs, got '",
                      o.optimizer, "'");
    } else if (flag == "--lr") {
      o.lr = detail::parse_double(flag, value());
      o.lr_given = true;
      if (!(o.lr > 0)) gradsum::fail("--lr: must be positive, got ", o.lr);
    } else if (flag == "--momentum") {
      o.momentum = detail::parse_double(flag, value());
    } else if (flag == "--beta1") {
      o.beta1 = detail::parse_double(flag, value());
    } else if (flag == "--beta2") {
      o.beta2 = detail::parse_double(flag, value());
    } else if (flag == "--eps") {
      o.eps = detail::parse_double(flag, value());
      if (!(o.eps > 0)) gradsum::fail("--eps: must be positive, got ", o.eps);
    } else if (flag == "--weight-decay") {
      o.weight_decay = detail::parse_double(flag, value());
      if (o.weight_decay < 0)
        gradsum::fail("--weight-decay: must be non-negative, got ", o.weight_decay);
    } else if (flag == "--schedule") {
      o.schedule = value();
      parse_schedule(o.schedule);  // rejects a malformed one now
    } else if (flag == "--warmup") {
      o.warmup = detail::parse_integer(flag, value(), 0, INT64_MAX);
    } else if (flag == "--line-search") {
      o.line_search = value();
      if (o.line_search != "armijo" && o.line_search != "wolfe" && o.line_search != "exact")
        gradsum::fail("--line-search: expected armijo, wolfe or exact, got '",
                      o.line_search, "'");
    } else if (flag == "--history") {
      o.history = int(detail::parse_integer(flag, value(), 1, 1000));
    } else if (flag == "--max-steps") {
      o.max_steps = detail::parse_integer(flag, value(), 0, INT64_MAX);
    } else if (flag == "--grad-tol") {
      o.grad_tol = detail::parse_double(flag, value());
      if (o.grad_tol < 0) gradsum::fail("--grad-tol: must be non-negative, got ", o.grad_tol);
    } else if (flag == "--on-nonfinite") {
      const std::string& action = value();
      if (action != "throw" && action != "skip")
        gradsum::fail("--on-nonfinite: expected throw or skip, got '", action, "'");
      o.skip_nonfinite = action == "skip";
    } else if (flag == "--reduce") {
      o.reduce = value();
      if (o.reduce != "sum" && o.reduce != "compensated" && o.reduce != "reproducible")
        gradsum::fail("--reduce: expected sum, compensated or reproducible, got '",
                      o.reduce, "'");
    } else if (flag == "--aggregate") {
      const std::string& text = value();
      const auto colon = text.find(':');
      const std::string name = text.substr(0, colon);
      const std::string knob = colon == std::string::npos ? "" : text.substr(colon + 1);
      const std::string expected = "expected sum, median, trimmed:K (integer K >= 0) or "
                                   "clip:C (number C > 0), got '" + text + "'";
      if ((name == "sum" || name == "median") && colon == std::string::npos) {
        o.aggregate = name;
      } else if (name == "trimmed" && colon != std::string::npos) {
        char* end = nullptr;
        errno = 0;
        const long k = std::strtol(knob.c_str(), &end, 10);
        if (knob.empty() || *end != '\0' || errno == ERANGE || k < 0 || k > 1000000)
          gradsum::fail("--aggregate: ", expected);
        o.aggregate = name;
        o.trimmed_k = int(k);
      } else if (name == "clip" && colon != std::string::npos) {
        char* end = nullptr;
        errno = 0;
        const double c = std::strtod(knob.c_str(), &end);
        if (knob.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(c) || !(c > 0))
          gradsum::fail("--aggregate: ", expected);
        o.aggregate = name;
        o.clip_c = c;
      } else {
        gradsum::fail("--aggregate: ", expected);
      }
    } else if (flag == "--workers") {
      o.workers = int(detail::parse_integer(flag, value(), 1, 4096));
    } else if (flag == "--loss-tol") {
      o.loss_tol = detail::parse_double(flag, value());
      if (o.loss_tol < 0) gradsum::fail("--loss-tol: must be non-negative, got ", o.loss_tol);
    } else if (flag == "--epochs") {
      o.epochs = int(detail::parse_integer(flag, value(), 0, 100000000));
    } else if (flag == "--batch") {
      o.batch = detail::parse_integer(flag, value(), 0, INT64_MAX);
    } else if (flag == "--l2") {
      o.l2 = detail::parse_double(flag, value());
      if (o.l2 < 0) gradsum::fail("--l2: must be non-negative, got ", o.l2);
    } else if (flag == "--seed") {
      o.seed = std::uint64_t(detail::parse_integer(flag, value(), 0, INT64_MAX));
    } else if (flag == "--standardize") {
      o.standardize = true;
    } else if (flag == "--space") {
      o.space = value();
    } else if (flag == "--max-values") {
      o.max_values = detail::parse_integer(flag, value(), 1, INT64_MAX / 8);
    } else if (flag == "--target-column") {
      o.target_column = int(detail::parse_integer(flag, value(), 0, 1000000000));
    } else if (flag == "--save-params") {
      o.save_params = value();
      if (o.save_params.empty()) gradsum::fail("--save-params: empty file name");
    } else if (flag == "--progress") {
      o.progress = value();
      if (o.progress != "auto" && o.progress != "on" && o.progress != "off")
        gradsum::fail("--progress: expected auto, on or off, got '", o.progress, "'");
    } else if (flag == "--log") {
      o.log = value();
      if (o.log.empty()) gradsum::fail("--log: empty file name");
    } else if (flag == "--checkpoint") {
      o.checkpoint = value();
      if (o.checkpoint.empty()) gradsum::fail("--checkpoint: empty file name");
      if (o.checkpoint == "-")
        gradsum::fail("--checkpoint: '-' (standard output) cannot hold a checkpoint, "
                      "which --resume reads back; name a file");
    } else if (flag == "--checkpoint-every") {
      o.checkpoint_every = detail::parse_integer(flag, value(), 1, INT64_MAX);
    } else if (flag == "--resume") {
      o.resume = value();
      if (o.resume.empty()) gradsum::fail("--resume: empty file name");
    } else if (flag == "--early-stop") {
      o.early_stop = detail::parse_integer(flag, value(), 1, INT64_MAX);
    } else if (flag == "--validation") {
      o.validation = detail::parse_double(flag, value());
      if (!(o.validation > 0 && o.validation < 1))
        gradsum::fail("--validation: expected a fraction in (0, 1), got ", o.validation);
    } else if (flag == "--accumulate") {
      o.accumulate = int(detail::parse_integer(flag, value(), 1, 1000000));
    } else if (flag == "--noise-scale") {
      o.noise_parts = int(detail::parse_integer(flag, value(), 1, 4096));
    } else if (flag == "--watch-workers") {
      o.watch_workers = true;
    } else if (flag == "--print-gradient") {
      o.print_gradient = true;
    } else if (flag == "--duplicates") {
      o.duplicates = true;
    } else if (flag == "--suspects" || flag == "--suspects-out") {
      detail::parse_suspects(flag, value(), o);
    } else if (flag.rfind("--kokkos-", 0) == 0) {
      // Kokkos' own option, e.g. --kokkos-threads=2.
    } else {
      gradsum::fail("unknown option '", flag, "' (see --help)");
    }
  }
  if (!o.help && o.data.empty()) gradsum::fail("--data FILE is required (see --help)");
  if (o.model != "mlp" && o.model != "softmax" &&
      std::find(args.begin(), args.end(), "--mlp-path") != args.end())
    gradsum::fail("--mlp-path: applies to --model mlp:… and softmax, not to --model ", o.model);
  if (o.model != "mlp") {
    for (const char* mlp_only : {"--loss", "--activation", "--init", "--diagnostics"})
      if (std::find(args.begin(), args.end(), mlp_only) != args.end())
        gradsum::fail(mlp_only, ": applies to --model mlp:…, not to --model ", o.model);
  } else {
    const char* first_order[] = {"sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adam", "adamw"};
    if (std::find(std::begin(first_order), std::end(first_order), o.optimizer) == std::end(first_order))
      gradsum::fail("--optimizer: --model mlp trains with sgd, momentum, nesterov, adagrad, "
                    "rmsprop, adam or adamw, got '", o.optimizer, "'");
  }
  if (o.clip_norm > 0 && (o.optimizer == "newton" || o.optimizer == "steepest" || o.optimizer == "lbfgs"))
    gradsum::fail("--clip-norm: applies to first-order optimizers, not to ", o.optimizer);
  if (o.duplicates && o.print_gradient)
    gradsum::fail("--duplicates: does not combine with --print-gradient, whose output is the "
                  "gradient alone");
  if (o.checkpoint_every > 0 && o.checkpoint.empty())
    gradsum::fail("--checkpoint-every: needs --checkpoint FILE");
  detail::check_suspects(o);
  return o;
}

/// The flags every rank must share, one signature field each, so that ranks
/// started with different ones are refused by name before they train (the
/// paths of inputs and outputs may differ between ranks; whether an output
/// is written may not, as writing it is collective).
inline gradsum::Signature agreed_flags(const Options& o) {
  gradsum::Signature s;
  s.subject = "were started with different flags or data";
  s.advice = "start every rank with the same flags and the same data";
  std::string widths;
  for (int h : o.hidden) widths += std::to_string(h) + ',';
  // Arrays, not braced lists: nvcc 11 cannot deduce the range of one.
  const std::pair<const char*, std::string> texts[] = {
      {"--model", o.model + ':' + widths}, {"--loss", o.loss}, {"--activation", o.activation},
      {"--mlp-path", o.mlp_path}, {"--init", o.init}, {"--optimizer", o.optimizer},
      {"--schedule", o.schedule}, {"--line-search", o.line_search}, {"--reduce", o.reduce},
      {"--aggregate", o.aggregate}, {"--space", o.space}};
  for (const auto& [flag, text] : texts) s.add_hash(flag, text);
  const std::pair<const char*, double> numbers[] = {
      {"--clip-norm", o.clip_norm}, {"--test-fraction", o.test_fraction},
      {"--lr", o.lr_given ? o.lr : -1}, {"--momentum", o.momentum}, {"--beta1", o.beta1},
      {"--beta2", o.beta2}, {"--eps", o.eps}, {"--weight-decay", o.weight_decay},
      {"--grad-tol", o.grad_tol}, {"--loss-tol", o.loss_tol}, {"--aggregate clip", o.clip_c},
      {"--l2", o.l2}, {"--validation", o.validation}};
  for (const auto& [flag, value] : numbers) s.add_bits(flag, value);
  const std::pair<const char*, std::int64_t> integers[] = {
      {"--warmup", o.warmup}, {"--history", o.history}, {"--max-steps", o.max_steps},
      {"--on-nonfinite skip", o.skip_nonfinite}, {"--aggregate trimmed", o.trimmed_k},
      {"--workers", o.workers}, {"--epochs", o.epochs}, {"--batch", o.batch},
      {"--seed", std::int64_t(o.seed)}, {"--standardize", o.standardize},
      {"--target-column", o.target_column}, {"--diagnostics", o.diagnostics},
      {"--save-params given", !o.save_params.empty()},
      {"--checkpoint given", !o.checkpoint.empty()}, {"--checkpoint-every", o.checkpoint_every},
      {"--resume given", !o.resume.empty()}, {"--early-stop", o.early_stop},
      {"--accumulate", o.accumulate}, {"--noise-scale", o.noise_parts},
      {"--watch-workers", o.watch_workers}, {"--print-gradient", o.print_gradient},
      {"--duplicates", o.duplicates}, {"--suspects", o.suspects},
      {"--suspects-out given", !o.suspects_out.empty()}};
  for (const auto& [flag, value] : integers) s.add(flag, value);
  return s;
}

}  // namespace gradsum_train
