// SPDX-License-Identifier: Apache-2.0
// gradsum-train's messages that need no template: the printer, the
// banner's lines and why training stopped.

#include "report.hpp"

#include <cstdarg>
#include <cstdio>

namespace gradsum_train {

void Printer::operator()(const char* format, ...) const {
  if (!on) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

void print_banner(const Context& context, const Banner& b) {
  const Options& o = context.options;
  const Printer& say = context.say;
  const std::string batch = o.batch == 0 ? "full batch" : "batch " + std::to_string(o.batch);
  say("gradsum-train: %s model, %s loss, %s optimizer, %zu samples x %zu features, "
      "%d parameters, space %s, %s, %d rank%s, %s%s\n",
      b.model.c_str(), b.loss.c_str(), name(o.optimizer).c_str(), context.inputs.train.num_rows,
      context.inputs.train.num_features, b.parameters, b.space.c_str(), b.threads.c_str(),
      b.ranks, b.ranks == 1 ? "" : "s", batch.c_str(), b.path.c_str());
  const auto& names = context.inputs.class_names;
  if (!names.empty()) {
    say("gradsum-train: classes");
    for (std::size_t k = 0; k < names.size(); ++k) say(" %zu=%s", k, names[k].c_str());
    say("\n");
  }
  if (o.reduce != "sum" || o.aggregate != "sum")
    say("gradsum-train: reduce %s, aggregate %s over %d %s\n", o.reduce.c_str(),
        robust_rule(o).name().c_str(), b.ranks > 1 ? b.ranks : o.workers,
        b.ranks > 1 ? "ranks" : "virtual workers");
  print_buckets(context, b.ranks, false, b.shard, b.scattered, b.parameters,
                context.options.bucket_cap);
}

void print_buckets(const Context& context, int ranks, bool overlapped,
                   const gradsum::ParameterShard& shard, bool scattered, int parameters,
                   std::int64_t bucket_cap) {
  const Options& o = context.options;
  const bool sharded = shard.partial(parameters);
  if (sharded)
    context.say("gradsum-train: the optimizer state sharded over %d ranks (ZeRO stage 1): rank 0 "
                "keeps and updates that of parameters [%lld, %lld) of %d, then the ranks "
                "exchange the updated parameters%s\n",
                ranks, static_cast<long long>(shard.begin), static_cast<long long>(shard.end),
                parameters,
                scattered ? "; the gradient reduce-scattered, each rank receiving the sums of "
                            "its block alone"
                          : "");
  if (ranks < 2 || o.aggregate != "sum") return;
  const std::string levels =
      context.sum_nodes > 1
          ? ", in two levels over " + std::to_string(context.sum_nodes) + " nodes"
          : "";
  if (bucket_cap > 0 && bucket_cap < one_bucket)
    context.say("gradsum-train: the sum in buckets of at most %lld bytes%s, each element added in "
                "rank order%s\n",
                static_cast<long long>(bucket_cap),
                overlapped ? ", sent while the backward pass runs" : "", levels.c_str());
  else if (bucket_cap >= one_bucket || context.sum_nodes > 1 || sharded)
    context.say("gradsum-train: the sum in one message after the backward pass, each element "
                "added in rank order%s\n", levels.c_str());
}

void report_stop(const Printer& say, const gradsum::FitResult& fitted) {
  if (fitted.reason != gradsum::StopReason::none)
    say("stopped after %lld steps: %s\n", static_cast<long long>(fitted.position.step),
        gradsum::describe(fitted.reason));
  if (!fitted.stopped_by.empty())
    say("stopped after %lld steps: %s\n", static_cast<long long>(fitted.position.step),
        fitted.stopped_by.c_str());
}

}  // namespace gradsum_train
