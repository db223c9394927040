// SPDX-License-Identifier: Apache-2.0
#pragma once

// What gradsum-train prints about a run: the banner before training, why
// training stopped, what a vanishing gradient found, and the final metrics.

#include "context.hpp"
#include "inputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>

namespace gradsum_train {

/// The banner's parts: what trains, on what, and how.
struct Banner {
  std::string model, loss, space, threads, path;
  int parameters = 0, ranks = 1;
  gradsum::ParameterShard shard;  // the parameters whose optimizer state rank 0 keeps
  bool scattered = false;         // the gradient reduce-scattered (Step::scatters_gradient)
};

/// Prints the banner: the run, the class names, the reduction and aggregation.
void print_banner(const Context& context, const Banner& banner);

/// Prints, on several ranks, whether the optimizer state is sharded
/// (--shard-optimizer), how the sum is cut (--bucket-cap) and whether it
/// goes in two levels (--sum-algorithm), unless it is one flat message;
/// `overlapped`: the buckets leave during the backward pass; `shard`: rank
/// 0's block of the `parameters` (Step::optimizer_shard); `scattered`: the
/// gradient reduce-scattered (Step::scatters_gradient); `bucket_cap`: the
/// cap in bytes (0 or less: one message; one_bucket: one bucket).
void print_buckets(const Context& context, int ranks, bool overlapped,
                   const gradsum::ParameterShard& shard, bool scattered, int parameters,
                   std::int64_t bucket_cap);

/// Prints why training stopped (a stopping rule, a callback), if it did.
void report_stop(const Printer& say, const gradsum::FitResult& fitted);

/// The banner's "N threads (why)": the space's own count, and who chose it.
template <class Space>
std::string describe_threads(const gradsum::ThreadChoice& c) {
  // A device's concurrency counts its lanes; the choice is the host's threads.
  int n = 0;
  constexpr bool host = std::is_same<typename Space::memory_space, Kokkos::HostSpace>::value;
  if constexpr (host) n = Space().concurrency();
  else n = Kokkos::DefaultHostExecutionSpace().concurrency();
  std::string out = gradsum::concat(n, host ? "" : " host", n == 1 ? " thread" : " threads");
  if (c.threads > 0)
    out += gradsum::concat(" (", c.cores, c.cores == 1 ? " core / " : " cores / ", c.local_ranks,
                           c.local_ranks == 1 ? " rank" : " ranks", " on this node)");
  else
    out += gradsum::concat(" (set by ", c.origin, ")");
  return out;
}

/// The banner's ", matrix path (gemm …)" or ", per-sample path": the path
/// the gradient takes. Linear regression's single path goes unnamed.
template <class Step, class Model>
std::string path_phrase(const Step& step, const Model&) {
  if constexpr (std::is_same<Model, gradsum::Linear>::value) {
    return {};
  } else {
    const gradsum::GradientPath path = step.gradient_path();
    return gradsum::concat(", ", gradsum::path_name(path),
                           path == gradsum::GradientPath::layerwise
                               ? gradsum::concat(" (gemm ", GRADSUM_GEMM, ")")
                               : std::string());
  }
}

/// Warns on standard error (rank 0) when the threads of a run on the host
/// `Space` and the load read at start-up need more cores than the machine has.
template <class Space>
void warn_oversubscribed(const Context& context) {
  if constexpr (std::is_same<typename Space::memory_space, Kokkos::HostSpace>::value) {
    const std::string why = gradsum::oversubscription_warning(
        context.load, Space().concurrency(), context.threads.cores, context.threads.local_ranks);
    if (!why.empty() && context.say.on)
      std::fprintf(stderr, "gradsum-train: warning: %s\n", why.c_str());
  }
}

/// Prints the banner of a run of `model` and `loss` on `Space`.
template <class Space, class Step, class Model, class Loss>
void announce(const Context& context, const Step& step, const Model& model, const Loss& loss,
              int ranks) {
  Banner banner;
  banner.model = model.name();
  if constexpr (std::is_same<Model, gradsum::MLP>::value) banner.model += ' ' + model.describe();
  banner.loss = loss.name();
  banner.space = gradsum::space_name<Space>();
  banner.threads = describe_threads<Space>(context.threads);
  banner.path = path_phrase(step, model);
  banner.parameters = step.num_parameters();
  banner.ranks = ranks;
  banner.shard = step.optimizer_shard();
  banner.scattered = step.scatters_gradient();
  print_banner(context, banner);
  warn_oversubscribed<Space>(context);
}

/// A vanishing gradient marks a critical point: the Hessian's extreme
/// eigenvalues say which kind.
template <class Step, class Theta, class Data>
void report_critical_point(const Printer& say, Step& step, const Theta& theta, const Data& data,
                           gradsum::RowRange rows) {
  const auto c = gradsum::curvature(step, theta, data, rows);
  const double scale = std::max(std::fabs(c.min_eigenvalue), std::fabs(c.max_eigenvalue));
  say("critical point: %s (Hessian eigenvalues from %.6g to %.6g, %s)\n",
      gradsum::describe(gradsum::classify(c, 1e-8 * std::max(scale, 1.0))),
      c.min_eigenvalue, c.max_eigenvalue,
      c.exact ? "exact" : gradsum::concat("Lanczos, ", c.products, " products").c_str());
}

/// " accuracy=X" (a classifier's share of `data` predicted right, counted
/// on rank 0: every rank holds the same parameters and data).
template <class Space, class Model, class Loss, class Theta, class Data>
void say_accuracy(const Printer& say, const char* name, const Model& model, const Loss& loss,
                  const Theta& theta, const Data& data) {
  const auto correct = gradsum::count_correct(Space(), model, loss, theta, data);
  say(" %s=%.6g", name, double(correct) / double(data.num_samples()));
}

/// " PREFIXrmse=X PREFIXr2=Y": a regression's scores on `data` (every
/// rank holds the same parameters and data; rank 0 prints).
template <class Space, class Model, class Theta, class Data>
void say_regression(const Printer& say, const char* prefix, const Model& model,
                    const Theta& theta, const Data& data) {
  const auto s = gradsum::regression_scores(Space(), model, theta, data);
  say(" %srmse=%.10g %sr2=%.10g", prefix, s.rmse, prefix, s.r2);
}

/// The last lines: the objective and gradient norm on the training rows,
/// with the accuracy of a classifier (RMSE and R^2 with the squared loss)
/// and the held-out rows' score, then the validation rows'.
template <class Space, class Step, class Model, class Loss, class Theta, class Data>
void report_final(const Context& context, Step& step, const Model& model, const Loss& loss,
                  const Theta& theta, const Data& data, const Data& validation) {
  constexpr bool classifier = gradsum::is_classifier_loss_v<Loss>;
  constexpr bool squared = std::is_same<Loss, gradsum::SquaredError>::value;
  const Printer& say = context.say;
  const int rank = step.aggregation().rank(), ranks = step.aggregation().size();
  auto evaluate = [&](const Data& d) {
    return step.evaluate(theta, d, gradsum::partition(d.num_samples(), ranks, rank));
  };
  const auto r = evaluate(data);
  say("final loss=%.10g grad_norm=%.10g", r.loss, r.gradient_norm);
  if constexpr (classifier) say_accuracy<Space>(say, "accuracy", model, loss, theta, data);
  if constexpr (squared) say_regression<Space>(say, "", model, theta, data);
  if (context.inputs.test.num_rows > 0) {
    const Data test = to_device<Data>(context.inputs.test);
    if constexpr (classifier) say_accuracy<Space>(say, "test_accuracy", model, loss, theta, test);
    else say(" test_loss=%.10g", evaluate(test).loss);
    if constexpr (squared) say_regression<Space>(say, "test_", model, theta, test);
  }
  say("\n");
  if (validation.num_samples() == 0) return;
  say("validation loss=%.10g", evaluate(validation).loss);
  if constexpr (classifier) say_accuracy<Space>(say, "accuracy", model, loss, theta, validation);
  if constexpr (squared) say_regression<Space>(say, "", model, theta, validation);
  say("\n");
}

}  // namespace gradsum_train
