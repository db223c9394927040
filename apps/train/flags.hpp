// SPDX-License-Identifier: Apache-2.0
#pragma once

// gradsum-train's flags, one table (common/flag_table.hpp says how it is read):
// the parser, --help and the flags every rank must share are made from it.

#include "options.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace gradsum_train {

using gradsum_apps::AgreedFields;
using gradsum_apps::given;
using gradsum_apps::same;
using gradsum_apps::Value;

// --aggregate sum | median | trimmed:K | clip:C; a bad knob is refused
// with the whole list of choices, as --help gives them.
inline void parse_aggregate(Options& o, const Value& v) {
  const auto colon = v.text.find(':');
  const std::string name = v.text.substr(0, colon);
  const std::string knob = colon == std::string::npos ? "" : v.text.substr(colon + 1);
  const bool has_knob = colon != std::string::npos;
  try {
    if ((name == "sum" || name == "median") && !has_knob) {
    } else if (name == "trimmed" && has_knob) {
      o.trimmed_k = int(gradsum_apps::parse_integer(v.flag, knob, 0, 1000000));
    } else if (name == "clip" && has_knob) {
      o.clip_c = gradsum_apps::parse_double(v.flag, knob);
      if (!(o.clip_c > 0)) gradsum::fail("C <= 0");
    } else {
      gradsum::fail("unknown rule");
    }
  } catch (const gradsum::Error&) {
    gradsum::fail(v.flag, ": expected sum, median, trimmed:K (integer K >= 0) or clip:C (number "
                  "C > 0), got '", v.text, "'");
  }
  o.aggregate = name;
}

inline void parse_model(Options& o, const Value& v) {
  if (v.text.rfind("mlp:", 0) == 0) {
    o.hidden = parse_widths(v.text.substr(4));
    o.model = "mlp";
    return;
  }
  if (v.text.rfind("gpt:", 0) == 0) {
    parse_gpt(v.text.substr(4), o);
    o.model = "gpt";
    return;
  }
  // "mlp:H1,H2,…" and "gpt:…" themselves went to the branches above.
  o.model = v.one_of({"linear", "logistic", "softmax", "mlp:H1,H2,…",
                      "gpt:layers=L,heads=H,width=C,context=T"});
}

/// The flags --text takes; the others do not apply to a GPT (yet).
inline const std::vector<std::string>& text_flags() {
  static const std::vector<std::string> names = {
      "--text", "--model", "--precision", "--validation", "--batch", "--epochs", "--max-steps",
      "--optimizer", "--lr", "--momentum", "--beta1", "--beta2", "--eps", "--weight-decay",
      "--schedule", "--warmup", "--clip-norm", "--l2", "--seed", "--space", "--save-params",
      "--save-model", "--init-params", "--print-gradient", "--checkpoint", "--checkpoint-every",
      "--resume", "--progress", "--bucket-cap", "--sum-algorithm",
      "--ranks-per-node", "--shard-optimizer", "--help", "-h", "--kokkos-"};
  return names;
}

/// gradsum-train's flags, in the order --help lists them.
inline const std::vector<gradsum_apps::Flag<Options>> flags = {
    {"--data", "FILE", "the CSV file (required)",
     [](Options& o, const Value& v) { o.data = v.text; }},
    {"--text", "FILE",
     "train --model gpt:… on the characters of a text file\n"
     "(instead of --data): windows of context + 1 characters",
     [](Options& o, const Value& v) { o.text = v.text; }},
    {"--target-column", "K", "0-based column of the target (default: last)",
     [](Options& o, const Value& v) { o.target_column = int(v.integer(0, 1000000000)); },
     same<&Options::target_column>},
    {"--max-values", "N",
     "refuse a data file of more than N feature values\n"
     "(default 2^28, 2 GiB as doubles): a gzip file can\n"
     "expand a thousandfold",
     [](Options& o, const Value& v) { o.max_values = v.integer(1, INT64_MAX / 8); }},
    {"--model", "M",
     "linear | logistic | softmax | mlp:H1,H2,… (hidden\n"
     "layer widths) | gpt:layers=L,heads=H,width=C,context=T\n"
     "(with --text; width divisible by heads); default logistic",
     parse_model,
     [](const char* flag, const Options& o, AgreedFields& f) {
       std::string widths;
       for (int h : o.hidden) widths += std::to_string(h) + ',';
       for (int g : {o.gpt_layers, o.gpt_heads, o.gpt_width, o.gpt_context})
         widths += std::to_string(g) + ',';
       f.add(flag, o.model + ':' + widths);
     }},
    {"--precision", "P", "gpt: float (default) | double",
     [](Options& o, const Value& v) { o.precision = v.one_of({"float", "double"}); },
     same<&Options::precision>},
    {"--loss", "L", "mlp: squared | logistic | softmax (default softmax)",
     [](Options& o, const Value& v) { o.loss = v.one_of({"squared", "logistic", "softmax"}); },
     same<&Options::loss>},
    {"--activation", "A", "mlp: relu | tanh | sigmoid | identity (default relu)",
     // checked by main with the library's parser
     [](Options& o, const Value& v) { o.activation = v.text; }, same<&Options::activation>},
    {"--mlp-path", "P",
     "mlp, softmax: auto (default: matrix, but softmax of at\n"
     "most 16 classes on CPU threads takes blocks of samples),\n"
     "matrix (each layer over the batch in matrix products,\n"
     "with --reduce sum) or per-sample",
     [](Options& o, const Value& v) { o.mlp_path = v.one_of({"auto", "matrix", "per-sample"}); },
     same<&Options::mlp_path>},
    {"--init", "I",
     "mlp: glorot | glorot_normal | he | he_uniform |\n"
     "uniform[:A] | normal[:S] | zeros | constant:V\n"
     "(default glorot; seeded by --seed)",
     // checked by main with the library's parser
     [](Options& o, const Value& v) { o.init = v.text; }, same<&Options::init>},
    {"--diagnostics", "",
     "mlp: per-layer gradient and parameter norms every\n"
     "epoch, with warnings (vanishing, exploding, symmetric units)",
     [](Options& o, const Value&) { o.diagnostics = true; }, same<&Options::diagnostics>},
    {"--clip-norm", "C",
     "clip the gradient to norm C > 0 before each update\n"
     "(first-order optimizers)",
     [](Options& o, const Value& v) { o.clip_norm = v.positive(); }, same<&Options::clip_norm>},
    {"--test-fraction", "F",
     "hold out a seeded fraction F in [0, 1) of the rows; the\n"
     "final line ends with test_accuracy= or test_loss=",
     [](Options& o, const Value& v) {
       o.test_fraction = v.number();
       if (!(o.test_fraction >= 0 && o.test_fraction < 1))
         gradsum::fail(v.flag, ": must be in [0, 1), got ", o.test_fraction);
     },
     same<&Options::test_fraction>},
    {"--optimizer", "NAME",
     gradsum_apps::choice_lines(optimizer_names(), 55) + " (default sgd)",
     [](Options& o, const Value& v) {
       const auto& names = optimizer_names();
       o.optimizer = Optimizer(std::find(names.begin(), names.end(), v.one_of(names)) - names.begin());
     },
     [](const char* flag, const Options& o, AgreedFields& f) { f.add(flag, name(o.optimizer)); }},
    {"--lr", "X",
     "learning rate > 0 (default 0.1 for sgd, else the\n"
     "optimizer's own: adam 0.001, newton 1 …)",
     [](Options& o, const Value& v) {
       o.lr = v.positive();
       o.lr_given = true;
     },
     [](const char* flag, const Options& o, AgreedFields& f) {
       f.add(flag, o.lr_given ? o.lr : -1.0);
     }},
    {"--momentum", "X", "momentum, nesterov: coefficient in [0, 1) (0.9)",
     [](Options& o, const Value& v) { o.momentum = v.number(); }, same<&Options::momentum>},
    {"--beta1", "X", "adam, adamw: moment decays in [0, 1) (0.9, 0.999)",
     [](Options& o, const Value& v) { o.beta1 = v.number(); }, same<&Options::beta1>},
    {"--beta2", "X", "adam, adamw: moment decays in [0, 1) (0.9, 0.999)",
     [](Options& o, const Value& v) { o.beta2 = v.number(); }, same<&Options::beta2>},
    {"--eps", "X", "adagrad, rmsprop, adam, adamw: denominator term > 0",
     [](Options& o, const Value& v) { o.eps = v.positive(); }, same<&Options::eps>},
    {"--weight-decay", "X", "adam, adamw: decoupled decay >= 0 (adamw 0.01)",
     [](Options& o, const Value& v) { o.weight_decay = v.non_negative(); },
     same<&Options::weight_decay>},
    {"--schedule", "S",
     "learning rate of first-order methods: constant,\n"
     "step:EVERY:GAMMA, exp:GAMMA, cosine:TOTAL[:MIN]",
     [](Options& o, const Value& v) {
       parse_schedule(v.text);  // refuses a malformed one now
       o.schedule = v.text;
     },
     same<&Options::schedule>},
    {"--warmup", "N", "linear warm-up over the first N steps",
     [](Options& o, const Value& v) { o.warmup = v.integer(0, INT64_MAX); },
     same<&Options::warmup>},
    {"--line-search", "L", "steepest: armijo | exact; lbfgs: wolfe | armijo",
     [](Options& o, const Value& v) { o.line_search = v.one_of({"armijo", "wolfe", "exact"}); },
     same<&Options::line_search>},
    {"--history", "M", "lbfgs: pairs kept, >= 1 (10)",
     [](Options& o, const Value& v) { o.history = int(v.integer(1, 1000)); },
     same<&Options::history>},
    {"--max-steps", "N", "stop after N steps (0 = no limit)",
     [](Options& o, const Value& v) { o.max_steps = v.integer(0, INT64_MAX); },
     same<&Options::max_steps>},
    {"--grad-tol", "X", "stop when the gradient norm is <= X",
     [](Options& o, const Value& v) { o.grad_tol = v.non_negative(); }, same<&Options::grad_tol>},
    {"--loss-tol", "X", "stop when the objective changes by <= X relatively",
     [](Options& o, const Value& v) { o.loss_tol = v.non_negative(); }, same<&Options::loss_tol>},
    {"--on-nonfinite", "A",
     "throw (default: stop with the rank and sample) or skip\n"
     "(leave the parameters, count the step as skipped)",
     [](Options& o, const Value& v) { o.skip_nonfinite = v.one_of({"throw", "skip"}) == "skip"; },
     [](const char*, const Options& o, AgreedFields& f) {
       f.add("--on-nonfinite skip", o.skip_nonfinite);
     }},
    {"--reduce", "R",
     "sum (default) | compensated | reproducible: how each\n"
     "process sums its samples' gradients (reproducible: the\n"
     "same bits for any thread count, backend and rank count)",
     [](Options& o, const Value& v) { o.reduce = v.one_of({"sum", "compensated", "reproducible"}); },
     same<&Options::reduce>},
    {"--aggregate", "A",
     "sum (default) | median | trimmed:K | clip:C: how workers'\n"
     "gradients combine; robust rules resist a corrupted\n"
     "worker (median needs 3 or more workers; trimmed drops\n"
     "the K largest and smallest values per coordinate,\n"
     "2K < workers; clip scales each worker's\n"
     "summed gradient to norm <= C > 0). The workers are the\n"
     "MPI ranks, or with one rank --workers parts of each batch",
     parse_aggregate,
     [](const char* flag, const Options& o, AgreedFields& f) {
       f.add(flag, o.aggregate);
       f.add("--aggregate clip", o.clip_c);
       f.add("--aggregate trimmed", o.trimmed_k);
     }},
    {"--workers", "W",
     "virtual workers per batch on one rank, >= 1 (default 4;\n"
     "used only by a robust --aggregate)",
     [](Options& o, const Value& v) { o.workers = int(v.integer(1, 4096)); },
     same<&Options::workers>},
    {"--bucket-cap", "BYTES",
     "with several ranks, sum the gradient in buckets of at\n"
     "most BYTES (0: one message after the backward pass);\n"
     "a GPT sends each bucket while its backward pass runs.\n"
     "auto (default): a GPT times one step and the link and\n"
     "takes the step model's choice; other models send one\n"
     "message. Every element in buckets is added in rank\n"
     "order: the same bits whatever BYTES",
     [](Options& o, const Value& v) {
       o.bucket_cap = v.text == "auto" ? -1 : v.integer(0, std::int64_t(1) << 40);
     },
     same<&Options::bucket_cap>},
    {"--sum-algorithm", "A",
     "auto (default) | flat | two-level: how the sum in\n"
     "buckets crosses the ranks; two-level adds inside each\n"
     "node first, then one value per element crosses each\n"
     "node boundary (auto: when the ranks fill several nodes\n"
     "of several ranks, node by node). The same bits either\n"
     "way; two-level with --bucket-cap 0 sends one bucket",
     [](Options& o, const Value& v) { o.sum_algorithm = v.one_of({"auto", "flat", "two-level"}); },
     same<&Options::sum_algorithm>},
    {"--ranks-per-node", "K",
     "what a node is for --sum-algorithm: 0 (default) the\n"
     "ranks that share memory; K > 0 ranks iK to iK + K - 1\n"
     "form node i (to try two-level sums on one machine)",
     [](Options& o, const Value& v) { o.ranks_per_node = int(v.integer(0, 1 << 30)); },
     same<&Options::ranks_per_node>},
    {"--shard-optimizer", "",
     "with several ranks, each rank keeps the optimizer\n"
     "state of 1/ranks of the parameters, receives their\n"
     "summed gradient alone (a reduce-scatter) and updates\n"
     "them, then the ranks exchange the updated parameters\n"
     "(ZeRO stage 1; first-order optimizers). Each element\n"
     "is added in rank order: the bits of an unsharded run\n"
     "in buckets",
     [](Options& o, const Value&) { o.shard_optimizer = true; }, same<&Options::shard_optimizer>},
    {"--epochs", "E", "passes over the data, >= 0 (default 10)",
     [](Options& o, const Value& v) { o.epochs = int(v.integer(0, 100000000)); },
     same<&Options::epochs>},
    {"--batch", "B", "mini-batch size, 0 = full batch (default 0)",
     [](Options& o, const Value& v) { o.batch = v.integer(0, INT64_MAX); }, same<&Options::batch>},
    {"--l2", "X", "L2 penalty >= 0 on weights (default 0)",
     [](Options& o, const Value& v) { o.l2 = v.non_negative(); }, same<&Options::l2>},
    {"--seed", "S",
     "seed of the mini-batch order, the test split and the\n"
     "initial parameters (default 0)",
     [](Options& o, const Value& v) { o.seed = std::uint64_t(v.integer(0, INT64_MAX)); },
     same<&Options::seed>},
    {"--standardize", "", "scale features to mean 0, deviation 1",
     [](Options& o, const Value&) { o.standardize = true; }, same<&Options::standardize>},
    {"--space", "NAME", "Kokkos execution space, e.g. serial, openmp",
     [](Options& o, const Value& v) { o.space = v.text; }, same<&Options::space>},
    {"--save-params", "FILE",
     "write the parameters, one per line ('-': standard\n"
     "output); FILE.safetensors: as --save-model",
     [](Options& o, const Value& v) { o.save_params = v.file(); }, given<&Options::save_params>},
    {"--save-model", "FILE",
     "write the trained model for inference: architecture,\n"
     "parameters, scaling, class names, as safetensors\n"
     "(gradsum-predict and gradsum::load_model read it)",
     [](Options& o, const Value& v) {
       o.save_model = v.file();
       if (o.save_model == "-")
         gradsum::fail(v.flag, ": '-' (standard output) cannot hold a binary model file; "
                       "name a file");
     },
     given<&Options::save_model>},
    {"--init-params", "FILE",
     "start from the parameters in FILE: safetensors (a\n"
     "--save-model file, or PyTorch's layout) or one value\n"
     "per line (as --save-params writes); also for\n"
     "--print-gradient",
     [](Options& o, const Value& v) { o.init_params = v.file(); }, given<&Options::init_params>},
    {"--progress", "P",
     "auto (a bar on a terminal, else one line per epoch),\n"
     "on (always the bar) or off (default auto)",
     [](Options& o, const Value& v) { o.progress = v.one_of({"auto", "on", "off"}); }},
    {"--log", "FILE.csv",
     "log step, epoch, loss, gradient norm, learning rate\n"
     "('-': standard output)",
     [](Options& o, const Value& v) { o.log = v.file(); }},
    {"--checkpoint", "FILE", "write a checkpoint when training ends (and see below)",
     [](Options& o, const Value& v) {
       o.checkpoint = v.file();
       if (o.checkpoint == "-")
         gradsum::fail(v.flag, ": '-' (standard output) cannot hold a checkpoint, which "
                       "--resume reads back; name a file");
     },
     given<&Options::checkpoint>},
    {"--checkpoint-every", "K", "also write it every K epochs",
     [](Options& o, const Value& v) { o.checkpoint_every = v.integer(1, INT64_MAX); },
     same<&Options::checkpoint_every>},
    {"--resume", "FILE", "continue from a checkpoint; --epochs counts the total",
     [](Options& o, const Value& v) { o.resume = v.file(); }, given<&Options::resume>},
    {"--validation", "F",
     "hold out the fraction F of the rows (a split seeded by\n"
     "--seed) and report their objective every epoch",
     [](Options& o, const Value& v) {
       o.validation = v.number();
       if (!(o.validation > 0 && o.validation < 1))
         gradsum::fail(v.flag, ": expected a fraction in (0, 1), got ", o.validation);
     },
     same<&Options::validation>},
    {"--early-stop", "P",
     "stop when the validation objective (else the training\n"
     "objective) has not improved for P epochs, and keep\n"
     "the best parameters",
     [](Options& o, const Value& v) { o.early_stop = v.integer(1, INT64_MAX); },
     same<&Options::early_stop>},
    {"--accumulate", "K", "sum K mini-batches per update, one message (default 1)",
     [](Options& o, const Value& v) { o.accumulate = int(v.integer(1, 1000000)); },
     same<&Options::accumulate>},
    {"--noise-scale", "K",
     "measure K workers per rank (K parts of every rank's\n"
     "batch; with --accumulate, its micro-batches): the\n"
     "spread of their losses and the gradient noise scale,\n"
     "printed at the end and written by --log",
     [](Options& o, const Value& v) { o.noise_parts = int(v.integer(1, 4096)); },
     same<&Options::noise_parts>},
    {"--watch-workers", "",
     "compare the workers' gradients every step (the ranks,\n"
     "or with one rank --workers parts of each batch; with\n"
     "--accumulate, its micro-batches; with --noise-scale K,\n"
     "its K parts), print 'outlier worker=W step=S ratio=X'\n"
     "for those more than 3 times as far from the workers'\n"
     "centre as the typical one, and a summary per worker at\n"
     "the end; needs 3 workers or more",
     [](Options& o, const Value&) { o.watch_workers = true; }, same<&Options::watch_workers>},
    {"--print-gradient", "",
     "print the objective and its gradient at the starting\n"
     "parameters (zero; an MLP's initialized ones; with\n"
     "--init-params FILE, those), or with --resume FILE at\n"
     "the checkpoint's, one value per line, and exit",
     [](Options& o, const Value&) { o.print_gradient = true; }, same<&Options::print_gradient>},
    {"--duplicates", "",
     "list the groups of rows with identical features and\n"
     "different targets (file rows, from 1), then train",
     [](Options& o, const Value&) { o.duplicates = true; }, same<&Options::duplicates>},
    {"--suspects", "K",
     "after training, print the K training rows whose target\n"
     "looks wrong, most suspicious first: the lowest margin\n"
     "averaged over the epochs (docs/bad-data.md)",
     [](Options& o, const Value& v) {
       o.suspects = v.integer(0, INT64_MAX);
       if (o.suspects == 0)
         gradsum::fail(v.flag, ": expected the number of rows to report, at least 1, got 0");
     },
     same<&Options::suspects>},
    {"--suspects-out", "FILE",
     "also write them as CSV (row,target,predicted,score;\n"
     "'-': standard output)",
     [](Options& o, const Value& v) { o.suspects_out = v.file(); }, given<&Options::suspects_out>},
    {"--help", "", "this text", [](Options& o, const Value&) { o.help = true; }},
    {"-h", "", "", [](Options& o, const Value&) { o.help = true; }},
    // Kokkos' own, e.g. --kokkos-threads=2: Environment reads them.
    {"--kokkos-", "", "", [](Options&, const Value&) {}},
};

/// gradsum-train --help.
inline std::string usage() {
  return "usage: gradsum-train --data FILE [options]\n"
         "       gradsum-train --text FILE --model gpt:layers=L,heads=H,width=C,context=T [options]\n"
         "\n"
         "Trains a model on a numeric CSV file (optional header row, target in\n"
         "the last column, as numbers or class names), or a GPT on the characters\n"
         "of a text file, by data-parallel gradient descent.\n"
         "\n" +
         gradsum_apps::describe_flags(flags, 25) +
         "\n"
         "Threads: unless OMP_NUM_THREADS, KOKKOS_NUM_THREADS or --kokkos-threads=N\n"
         "says otherwise, each process takes its cores divided by the ranks on its\n"
         "node (the first line of output says how many).\n"
         "\n"
         "Files written (--save-params, --save-model, --log, --checkpoint) replace\n"
         "their target only once complete, through a temporary file beside it; a\n"
         "symbolic link keeps pointing at the updated file; a FIFO or device is\n"
         "written in place.\n"
         "\n"
         "gradsum-train --plan [--help] predicts whether distributing a job pays.\n";
}

// --text and --model gpt:… go together, with the flags text_flags() names.
inline void check_text_flags(const Options& o, const std::vector<std::string>& given) {
  if (o.text.empty()) gradsum::fail("--model gpt:…: trains on --text FILE, not on --data");
  if (!o.data.empty()) gradsum::fail("--text: does not combine with --data; give one");
  if (o.model != "gpt")
    gradsum::fail("--text: trains --model gpt:layers=L,heads=H,width=C,context=T, not --model ",
                  o.model);
  for (const auto& flag : given)
    if (flag.rfind("--kokkos-", 0) != 0 &&
        std::find(text_flags().begin(), text_flags().end(), flag) == text_flags().end())
      gradsum::fail(flag, ": does not apply to --text (a GPT takes ",
                    gradsum_apps::either(text_flags()), ")");
  if (!is_first_order(o.optimizer))
    gradsum::fail("--optimizer: --model gpt trains with ", gradsum_apps::either(first_order_names()),
                  ", got '", name(o.optimizer), "'");
}

// The flags that do not combine, checked once all are read.
inline void check_combinations(const Options& o, const std::vector<std::string>& given) {
  auto was_given = [&](const char* flag) {
    return std::find(given.begin(), given.end(), flag) != given.end();
  };
  if (!o.help && o.data.empty() && o.text.empty())
    gradsum::fail("--data FILE is required (or --text FILE for --model gpt:…; see --help)");
  if (!o.text.empty() || o.model == "gpt") check_text_flags(o, given);
  if (o.model != "gpt" && was_given("--precision"))
    gradsum::fail("--precision: applies to --model gpt:…, not to --model ", o.model);
  if (o.model != "mlp" && o.model != "softmax" && was_given("--mlp-path"))
    gradsum::fail("--mlp-path: applies to --model mlp:… and softmax, not to --model ", o.model);
  const char* const mlp_only[] = {"--loss", "--activation", "--init", "--diagnostics"};
  for (const char* flag : mlp_only)
    if (o.model != "mlp" && was_given(flag))
      gradsum::fail(flag, ": applies to --model mlp:…, not to --model ", o.model);
  if (o.model == "mlp" && !is_first_order(o.optimizer))
    gradsum::fail("--optimizer: --model mlp trains with ", gradsum_apps::either(first_order_names()),
                  ", got '", name(o.optimizer), "'");
  if (o.clip_norm > 0 && !is_first_order(o.optimizer))
    gradsum::fail("--clip-norm: applies to first-order optimizers, not to ", name(o.optimizer));
  if (o.shard_optimizer && !is_first_order(o.optimizer))
    gradsum::fail("--shard-optimizer: shards the state of ",
                  gradsum_apps::either(first_order_names()),
                  ", whose updates are elementwise, not of ", name(o.optimizer));
  if (o.duplicates && o.print_gradient)
    gradsum::fail("--duplicates: does not combine with --print-gradient, whose output is the "
                  "gradient alone");
  if (o.checkpoint_every > 0 && o.checkpoint.empty())
    gradsum::fail("--checkpoint-every: needs --checkpoint FILE");
  if (!o.init_params.empty() && !o.resume.empty())
    gradsum::fail("--init-params: does not combine with --resume, which continues from the "
                  "checkpoint's parameters");
  if (!o.suspects_out.empty() && o.suspects == 0)
    gradsum::fail("--suspects-out: needs --suspects K (how many rows to write)");
  if (o.suspects > 0 && o.print_gradient)
    gradsum::fail("--suspects: ranks rows after training, but --print-gradient does not train");
}

/// Parses the arguments (program name excluded). Throws gradsum::Error
/// naming the flag and the value on anything it cannot accept. Arguments
/// starting with --kokkos- are left to Kokkos.
inline Options parse(const std::vector<std::string>& args) {
  Options o;
  check_combinations(o, gradsum_apps::parse_flags(flags, args, o, {"", "--help", false}));
  return o;
}

/// The flags every rank must share, so that ranks started with different
/// ones are refused by name before they train (the paths of inputs and
/// outputs may differ between ranks; whether an output is written may not,
/// as writing it is collective).
inline gradsum::Signature agreed_flags(const Options& o) {
  gradsum::Signature s = gradsum_apps::agreed_fields(flags, o);
  s.subject = "were started with different flags or data";
  s.advice = "start every rank with the same flags and the same data";
  return s;
}

}  // namespace gradsum_train
