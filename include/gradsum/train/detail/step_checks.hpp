// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The step's run-time checks, in one place: its policies when it is built
/// (the model/loss pairing, the per-sample limits, the knobs, an optimizer
/// that asks for a Hessian the model or loss cannot give), the arguments of
/// measure_workers and watch_workers, and its inputs at each evaluation
/// (shapes, the rows of robust virtual workers, targets and features once
/// per data set). The input checks return what is wrong, or "", so that a
/// worker's error travels to every worker instead of throwing on one; the
/// others throw gradsum::Error. (What a policy must provide is checked at
/// compile time by core/requirements.hpp.)

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/path.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

// When the step is built.

/// The run-time checks of a step's policies: the model/loss pairing, the
/// per-sample limits of a model off the layer-wise path (`path`), and
/// every policy's knobs. Throws gradsum::Error.
template <class Model, class Loss, class Optimizer, class Gradient>
void validate_step_policies(const Model& model, const Loss& loss, const Optimizer& optimizer,
                            const Objective& objective, const Gradient& gradient,
                            GradientPath path) {
  const int k = model.num_outputs();
  if (!loss.supports_outputs(k))
    fail("gradsum::Step: loss ", loss.name(), " cannot take a model with ", k,
         " output(s) (model ", model.name(), ")");
  if (is_network<Model>::value && path != GradientPath::network)
    fail("gradsum::Step: a Network (a composition of layers) sums on the network path, which "
         "takes a plain reduction (Sum) only: the reduction here needs each sample's "
         "contribution, which a network of layers does not compute on its own");
  if (is_network<Model>::value) {
    objective.validate();
    gradient.validate();
    optimizer.validate();
    return;
  }
  if (path != GradientPath::layerwise && !per_sample_limits(model).empty())
    fail("gradsum::Step: this step would take the per-sample path, and ",
         per_sample_limits(model), "; the layer-wise path has no such limits: train it with "
         "the Analytic gradient, the Sum reduction and layerwise = true");
  if (k > output_capacity<Model>::value)
    fail("gradsum::Step: model ", model.name(), " has ", k,
         " outputs, more than the per-sample limit of ", output_capacity<Model>::value,
         " (define GRADSUM_MAX_OUTPUTS to raise it)");
  objective.validate();
  gradient.validate();
  optimizer.validate();
}

/// What the Hessian needs that the model or loss lacks, naming each
/// missing member, or "" when both provide it.
template <class Scalar, class Model, class Loss>
std::string missing_hessian(const std::string& optimizer, const Model& model, const Loss& loss) {
  constexpr bool model_has = has_model_hessian<Model, Scalar>::value;
  constexpr bool loss_has = has_second_derivative<Loss, Scalar>::value;
  if (model_has && loss_has) return {};
  return concat("gradsum::Step: optimizer ", optimizer, " needs the Hessian, which model ",
                model.name(), " with loss ", loss.name(), " does not provide: ",
                model_has ? "" : "the Model must provide `hessian(const Scalar* theta, const "
                                 "Scalar* x, const Scalar* d2, Scalar* H) const`",
                model_has || loss_has ? "" : " and ",
                loss_has ? "" : "the Loss must provide `second_derivative(const Scalar* z, "
                                "int k, Scalar y, Scalar* d2) const`",
                " (Linear and Softmax with the library's losses do); choose a method "
                "without it (e.g. SteepestDescent with LineSearch::armijo, or LBFGS)");
}

/// Refuses, in a step's constructor, an optimizer whose run-time choice
/// (`uses_hessian()`, e.g. an exact line search) needs a Hessian the model
/// or loss cannot give; throws gradsum::Error. (A static `needs_hessian`
/// is refused at compile time by check_step_policies.)
template <class Scalar, class Model, class Loss, class Optimizer>
void check_hessian_use(const Model& model, const Loss& loss, const Optimizer& optimizer) {
  if (!optimizer_uses_hessian(optimizer)) return;
  const std::string error = missing_hessian<Scalar>(optimizer.name(), model, loss);
  if (!error.empty()) throw Error(error);
}

/// The checks of Step::evaluate's argument types: data and parameters in
/// memory the step's space can access, the data's scalar the step's.
template <class ExecutionSpace, class Scalar, class Theta, class Data>
constexpr bool check_evaluate_types() {
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename Data::memory_space>::accessible,
      "gradsum::Step::evaluate: the data's memory space is not accessible "
      "from the step's execution space; copy the data with "
      "Kokkos::create_mirror_view_and_copy first");
  static_assert(
      Kokkos::SpaceAccessibility<ExecutionSpace, typename Theta::memory_space>::accessible,
      "gradsum::Step::evaluate: the parameters' memory space is not "
      "accessible from the step's execution space");
  static_assert(std::is_same<typename Data::scalar_type, Scalar>::value,
                "gradsum::Step::evaluate: the data's scalar type differs "
                "from the step's Scalar");
  return true;
}

/// The Reproducible reduction (whose integer bins the step sums across
/// workers) sums what the Analytic gradient's bodies hand it.
template <class Gradient, class Reduction>
constexpr bool check_gradient_for_reduction() {
  static_assert(!is_binned_reduction<Reduction>::value || is_analytic_based<Gradient>::value,
                "gradsum::Step: the Reproducible reduction needs the Analytic gradient "
                "policy (or VirtualWorkers<Analytic>)");
  return true;
}

// Step::measure_workers and Step::watch_workers.

/// The checks of Step::measure_workers(parts_per_rank): a count in
/// [0, 2^20], measured only where the workers' gradients are summed (no
/// robust `gradient` or `aggregation`) as each worker's own rounded sums
/// (`workers.rounds_each_worker()`: not Reproducible's integer bins).
template <class Gradient, class Aggregation, class Workers>
void check_measure_workers(int parts_per_rank, const Gradient& gradient,
                           const Aggregation& aggregation, const Workers& workers,
                           const std::string& reduction) {
  if (parts_per_rank < 0 || parts_per_rank > (1 << 20))
    fail("gradsum::Step::measure_workers: parts_per_rank must be in [0, 2^20], got ",
         parts_per_rank);
  if (parts_per_rank > 0 && (combines_robustly(gradient) || combines_robustly(aggregation)))
    fail("gradsum::Step::measure_workers: a robust combination of workers (median, "
         "trimmed mean, norm clipping) does not sum their gradients, so the noise "
         "estimates would not hold; measure with the plain sum of workers");
  if (parts_per_rank > 0 && !workers.rounds_each_worker())
    fail("gradsum::Step::measure_workers: the ", reduction, " reduction "
         "aggregates integer bins, not per-worker sums; measure with the sum or "
         "compensated reduction");
}

/// The checks of Step::watch_workers: `parts_per_rank` in [0, 2^20] (done
/// by measure_workers), at least three workers in all, and a threshold
/// above 1. The same on every rank for the same arguments.
inline void check_watch_workers(int parts_per_rank, int ranks, double threshold) {
  if (parts_per_rank > 0 && std::int64_t(parts_per_rank) * ranks < 3)
    fail("gradsum::Step::watch_workers: naming an outlier needs at least 3 workers "
         "(parts_per_rank x ranks), got ", parts_per_rank, " x ", ranks, " = ",
         std::int64_t(parts_per_rank) * ranks,
         "; with two, each is as far from the other and neither can be named");
  if (!(threshold > 1) || !std::isfinite(threshold))
    fail("gradsum::Step::watch_workers: threshold must be finite and above 1 (a ratio "
         "to the typical worker's distance), got ", threshold);
}

// Each evaluation's inputs.

/// Finds the first row whose target the loss rejects or whose features are
/// not finite; returns n when every row is valid.
template <class Loss, class X, class Y>
struct FirstInvalidRow {
  Loss loss;
  X x;
  Y y;
  int num_outputs;
  /// Above 0: every feature is a token id, a whole number in [0, this).
  int token_ids = 0;

  KOKKOS_FUNCTION void operator()(std::int64_t r, std::int64_t& first) const {
    using Scalar = typename X::non_const_value_type;
    bool ok = loss.is_valid_target(y(r), num_outputs);
    for (std::size_t j = 0; j < x.extent(1); ++j) ok = ok && math::isfinite(x(r, j));
    for (std::size_t j = 0; token_ids > 0 && j < x.extent(1); ++j) {
      const Scalar v = x(r, j);
      ok = ok && v >= Scalar(0) && v < Scalar(token_ids) && Scalar(std::int64_t(v)) == v;
    }
    if (!ok && r < first) first = r;
  }
};

/// How many rows `rows` may address in `data`.
template <class Data>
std::int64_t row_limit(const Data& data, const RowRange&) {
  return data.num_samples();
}
template <class Data, class Memory>
std::int64_t row_limit(const Data&, const RowList<Memory>& rows) {
  return std::int64_t(rows.index.extent(0));
}

/// What is wrong with `theta`, `data` and `rows` for `model`, or "".
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const Rows& rows) {
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    return concat("gradsum::Step::evaluate: theta has ", theta.extent(0), " entries but model ",
                  model.name(), " has ", model.num_parameters(), " parameters");
  if (data.num_features() != model.num_features())
    return concat("gradsum::Step::evaluate: the data have ", data.num_features(),
                  " features but model ", model.name(), " expects ", model.num_features());
  if (rows.size() > 0 && (rows.begin < 0 || rows.end > std::int64_t(row_limit(data, rows))))
    return concat("gradsum::Step::evaluate: rows [", rows.begin, ", ", rows.end,
                  ") are outside the ", row_limit(data, rows), " available");
  return {};
}

/// The same for every micro-batch; several of them need each worker's
/// own rounded sums (`rounded`, false where the reduction's workers add
/// integer bins exactly: Reproducible).
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const MicroBatches<Rows>& micro, bool rounded) {
  if (micro.parts.size() > 1 && !rounded)
    return "gradsum::Step::evaluate: gradient accumulation (MicroBatches) does not work with "
           "the Reproducible reduction; use accumulate = 1 or the Sum reduction";
  for (const auto& part : micro.parts) {
    const std::string error = check_shapes(model, theta, data, part);
    if (!error.empty()) return error;
  }
  return check_shapes(model, theta, data, RowRange{});
}
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const Rows& rows, bool) {
  return check_shapes(model, theta, data, rows);
}

/// A median or trimmed mean over W virtual workers (VirtualWorkers) counts
/// every worker's gradient as a vote: rows split into fewer than W
/// non-empty parts leave workers whose zero gradients would outvote the
/// rest (training could stall at zero, silently). What is wrong, or "".
template <class Gradient, class Rows>
std::string check_worker_rows(const Gradient& gradient, const Rows& rows) {
  if constexpr (has_robust<Gradient>::value) {
    if (gradient.robust() && gradient.rule.counts_votes() && rows.size() < gradient.workers)
      return concat("gradsum::VirtualWorkers: a ", gradient.rule.name(), " over ",
                    gradient.workers, " workers got a mini-batch of ", rows.size(),
                    " rows on this rank, leaving ", gradient.workers - rows.size(),
                    " workers without rows whose zero gradients would outvote the others; use "
                    "mini-batches of at least ", gradient.workers,
                    " rows on every rank, or fewer workers");
  }
  return {};
}
template <class Gradient, class Rows>
std::string check_worker_rows(const Gradient& gradient, const MicroBatches<Rows>& micro) {
  for (const auto& part : micro.parts) {
    const std::string error = check_worker_rows(gradient, part);
    if (!error.empty()) return error;
  }
  return {};
}

/// ": feature j is v" for row `row`'s first non-finite feature, else
/// ": target is y".
template <class Data>
std::string describe_row(const Data& data, std::int64_t row) {
  auto y = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(data.targets(), Kokkos::make_pair(row, row + 1)));
  // Through a contiguous copy: a mirror of a strided row spans every row.
  Kokkos::View<typename Data::scalar_type*, typename Data::memory_space> values(
      "gradsum::step::row", std::size_t(data.num_features()));
  Kokkos::deep_copy(values, Kokkos::subview(data.features(), row, Kokkos::ALL()));
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), values);
  for (std::size_t j = 0; j < x.extent(0); ++j)
    if (!std::isfinite(double(x(j)))) return concat(": feature ", j, " is ", double(x(j)));
  return concat(": target is ", double(y(0)));
}

/// The vocabulary whose ids every feature must be (a Network over windows
/// of text), or 0.
template <class Model>
int token_ids(const Model& model) {
  if constexpr (is_network<Model>::value) return model.windows() ? model.vocabulary() : 0;
  else {
    (void)model;
    return 0;
  }
}

/// Checks targets and features once per data set (identified by its
/// Views): the first row the loss rejects, or with a non-finite feature.
class DataCheck {
 public:
  template <class Space, class Model, class Loss, class Data>
  std::string operator()(const Space& space, const Model& model, const Loss& loss,
                         const Data& data) {
    const void* id = data.targets().data();
    if (id == checked_ && data.num_samples() == rows_) return {};
    const std::int64_t n = data.num_samples();
    std::int64_t first = n;
    using Functor =
        FirstInvalidRow<Loss, typename Data::features_view, typename Data::targets_view>;
    Kokkos::parallel_reduce(
        "gradsum::step::check_data",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, n),
        Functor{loss, data.features(), data.targets(), model.num_outputs(), token_ids(model)},
        Kokkos::Min<std::int64_t>(first));
    if (first < n && token_ids(model) > 0)
      return concat("gradsum::Step::evaluate: window ", first, " of the data holds a value that "
                    "is not a token id of the vocabulary of ", token_ids(model),
                    " (a whole number from 0 to ", token_ids(model) - 1, ")",
                    describe_row(data, first));
    if (first < n)
      return concat("gradsum::Step::evaluate: row ", first, " of the data has a target the loss ",
                    loss.name(), " rejects for ", model.num_outputs(),
                    " output(s), or a non-finite feature", describe_row(data, first));
    checked_ = id;
    rows_ = n;
    return {};
  }

 private:
  const void* checked_ = nullptr;
  std::int64_t rows_ = -1;
};

}  // namespace detail
}  // namespace gradsum
