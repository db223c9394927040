// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Step: one data-parallel training step composed of compile-time
/// policies, and make_step.

#include <gradsum/aggregation/local.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/path.hpp>
#include <gradsum/optimizer/sgd.hpp>
#include <gradsum/reduction/sum.hpp>
#include <gradsum/train/detail/hessian.hpp>
#include <gradsum/train/detail/host_copies.hpp>
#include <gradsum/train/detail/local_sums.hpp>
#include <gradsum/train/detail/nonfinite.hpp>
#include <gradsum/train/detail/objective_gradient.hpp>
#include <gradsum/train/detail/optimizer_shards.hpp>
#include <gradsum/train/detail/ordered_norms.hpp>
#include <gradsum/train/detail/reduction_workers.hpp>
#include <gradsum/train/detail/step_checks.hpp>
#include <gradsum/train/detail/step_message.hpp>
#include <gradsum/train/detail/step_signature.hpp>
#include <gradsum/train/objective.hpp>
#include <gradsum/train/update_context.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum {

/// One data-parallel training step, composed of compile-time policies.
///
///     local  = Reduction over my rows of Gradient(Model, Loss)  (on the space)
///     global = Aggregation(local) across workers                (MPI or none)
///     g      = global / N + l2 W                                (Objective)
///     theta  = Optimizer(theta, g)
///
/// Template parameters: the Kokkos `ExecutionSpace` the kernels run on, the
/// `Scalar` type of data and parameters, and one type per policy role (the
/// contracts are in core/requirements.hpp and docs/design.md). Parameters,
/// gradients and optimizer state live in `ExecutionSpace::memory_space`;
/// the data may live in any memory space the execution space can access.
///
/// All buffers are allocated by the constructor; evaluating and stepping
/// allocate nothing. Both are blocking (they return host values) and, with
/// a distributed Aggregation, collective: every worker must call them in
/// the same order.
template <class ExecutionSpace, class Scalar, class Model, class Loss,
          class Optimizer = SGD, class Gradient = Analytic,
          class Reduction = Sum, class Aggregation = Local>
class Step {
  static_assert(detail::check_step_policies<ExecutionSpace, Scalar, Model, Loss, Optimizer,
                                             Gradient, Reduction, Aggregation>());
  using Slot = detail::StepSlot;
  // How the reduction sums over workers: the step calls them, they decide.
  using Workers = detail::ReductionWorkers<Reduction, Scalar, typename ExecutionSpace::memory_space>;

 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using scalar_type = Scalar;
  using parameters_view = Kokkos::View<Scalar*, memory_space>;
  /// Optimizer state: state_size(P) rows of P values (of the block
  /// optimizer_shard() when the aggregation shards it), zeros at the start.
  using state_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;
  using model_type = Model;
  using loss_type = Loss;
  using optimizer_type = Optimizer;
  using gradient_type = Gradient;
  using reduction_type = Reduction;
  using aggregation_type = Aggregation;

  /// Builds the step and allocates every buffer it will use. Validates the
  /// run-time knobs of every policy and the model/loss pairing.
  Step(const ExecutionSpace& space, const Model& model, const Loss& loss,
       const Optimizer& optimizer = {}, const Objective& objective = {},
       const Gradient& gradient = {}, const Reduction& reduction = {},
       const Aggregation& aggregation = {})
      : space_(space),
        model_(model),
        loss_(loss),
        optimizer_(optimizer),
        objective_(objective),
        gradient_(gradient),
        reduction_(reduction),
        aggregation_(aggregation) {
    // A value one worker rejects must fail every worker, not leave the
    // others waiting in a collective: local errors travel with the
    // agreement on the signature.
    std::string local_error;
    try {
      detail::validate_step_policies(model_, loss_, optimizer_, objective_, gradient_,
                                     gradient_path());
      detail::check_hessian_use<Scalar>(model_, loss_, optimizer_);
      local_error = detail::shard_error(optimizer_, aggregation_);
    } catch (const Error& e) {
      local_error = e.what();
    }
    aggregation_.agree(signature(), local_error);
    const int P = model_.num_parameters();
    gradient_view_ = parameters_view("gradsum::step::gradient", std::size_t(P));
    local_.allocate(P);
    work_ = parameters_view("gradsum::step::workspace", workspace_size());
    host_norms_ = Kokkos::View<Scalar[2], Kokkos::HostSpace>("gradsum::step::norms");
    host_vector_ = Kokkos::View<Scalar*, Kokkos::HostSpace>("gradsum::step::host_vector",
                                                            std::size_t(P));
    shard_ = detail::optimizer_shard(aggregation_, P);
    norms_ = Norms(P, aggregation_.size(), Norms::template part_size<ExecutionSpace>());
    state_ = state_view("gradsum::step::optimizer_state",
                        std::size_t(optimizer_.state_size(P)), std::size_t(shard_.size()));
    size_message();
    workers_ = Workers(reduction_, gradient_, aggregation_, P + 1);
    if (detail::optimizer_uses_hessian(optimizer_)) allocate_hessian();
  }

  /// What every worker must agree on: sizes, scalar type, policy names,
  /// the objective and the learning rate. Compared across workers by the
  /// step's constructor.
  Signature signature() const {
    return detail::step_signature<Scalar>(model_, loss_, optimizer_, objective_, gradient_,
                                          reduction_, aggregation_);
  }

  /// Number of parameters P.
  int num_parameters() const { return model_.num_parameters(); }

  /// How evaluate() sums the gradient (gradient/path.hpp): the path
  /// gradient_path() chooses for the model, loss, reduction and space when
  /// the gradient policy is Analytic (or VirtualWorkers of it); per_sample
  /// for other gradient policies (CentralDifference).
  GradientPath gradient_path() const {
    if constexpr (detail::is_analytic_based<Gradient>::value)
      return gradsum::gradient_path<ExecutionSpace, Scalar>(model_, loss_, reduction_);
    else
      return GradientPath::per_sample;
  }
  /// Whether evaluate() sums the gradient on the model's layer-wise path
  /// (matrix products): gradient_path() == GradientPath::layerwise.
  bool layerwise() const { return gradient_path() == GradientPath::layerwise; }

  /// A new parameter vector of length P in the step's memory space, zeros.
  parameters_view make_parameters() const {
    return parameters_view("gradsum::parameters", std::size_t(num_parameters()));
  }

  /// The objective and its gradient at `theta` over the rows `rows` of
  /// `data`, summed over every worker, without updating. Afterwards
  /// `gradient()` holds the gradient of J and `sums()` the summed
  /// gradient, loss and count. Blocking; collective.
  ///
  /// Throws gradsum::Error when theta or data do not fit the model, when a
  /// target or feature is invalid (checked once per data set), and when
  /// the batch holds no sample on any worker.
  template <class Theta, class Data, class Rows>
  StepResult evaluate(const Theta& theta, const Data& data, const Rows& rows) {
    static_assert(detail::check_evaluate_types<ExecutionSpace, Scalar, Theta, Data>());
    // Errors found on this worker do not throw here: they are counted in
    // the message's `failed` slot, which every worker sees after aggregation.
    std::string local_error =
        detail::check_shapes(model_, theta, data, rows, workers_.rounds_each_worker());
    if (local_error.empty()) local_error = detail::check_worker_rows(gradient_, rows);
    if (local_error.empty() && !layerwise() && gradient_path() != GradientPath::network)
      local_error = detail::gather_limit("gradsum::Step::evaluate", data.features());
    if (local_error.empty()) local_error = check_data_(space_, model_, loss_, data);
    const bool local_nonfinite = sum_workers(theta, data, rows, local_error.empty());
    detail::ScopedRegion region("gradsum::step::finalize");
    message_.read_slots(space_);
    if (message_.slot(Slot::failed) > Scalar(0))
      throw AgreedError(aggregation_.first_error(local_error));
    const auto count = std::int64_t(message_.slot(Slot::count));
    if (message_.slot(Slot::nonfinite) > Scalar(0)) {
      // Every worker is here: the count of non-finite workers was summed.
      if (objective_.on_nonfinite == NonFinite::skip) return skipped(count);
      throw AgreedError(aggregation_.first_error(
          local_nonfinite
              ? detail::describe_nonfinite<Scalar>(space_, model_, loss_, theta, data, rows)
              : std::string()));
    }
    if (count <= 0)
      fail_agreed("gradsum::Step::evaluate: the batch holds no samples on "
                   "any worker (empty data set or empty row selection); a "
                   "gradient needs at least one sample");
    return objective_at(theta, count);
  }

  /// evaluate() over every row of `data`.
  template <class Theta, class Data>
  StepResult evaluate(const Theta& theta, const Data& data) {
    return evaluate(theta, data, data.all_rows());
  }

  /// Whether evaluate_loss() skips the gradient: a Network with the
  /// Analytic gradient.
  static constexpr bool loss_without_gradient =
      detail::is_network<Model>::value && std::is_same<Gradient, Analytic>::value;

  /// The objective J at `theta` over `rows` (a held-out loss, say),
  /// without its gradient where the model allows (loss_without_gradient,
  /// and no worker statistics measured): the forward passes and the loss
  /// alone, a third of evaluate()'s work or less. The loss is the one
  /// evaluate() gives, bit for bit; gradient_norm is NaN and gradient()
  /// holds no gradient. Otherwise this is evaluate(). Blocking; collective.
  template <class Theta, class Data, class Rows>
  StepResult evaluate_loss(const Theta& theta, const Data& data, const Rows& rows) {
    if (!loss_without_gradient || local_.watch().parts() > 0) return evaluate(theta, data, rows);
    struct LossOnly {  // evaluate() without the backward passes, even if it throws
      bool& flag;
      explicit LossOnly(bool& f) : flag(f) { flag = true; }
      ~LossOnly() { flag = false; }
    } loss_only(loss_only_);
    StepResult result = evaluate(theta, data, rows);
    result.gradient_norm = std::nan("");
    return result;
  }

  /// One training step: evaluate() at `theta`, then the optimizer's update
  /// of `theta` in place. The result describes `theta` before the update.
  /// Blocking; collective.
  template <class Theta, class Data, class Rows>
  StepResult operator()(const Theta& theta, const Data& data, const Rows& rows) {
    const StepResult result = [&] {
      struct Scatter {  // evaluate() as a reduce-scatter, even if it throws
        bool& flag;
        Scatter(bool& f, bool on) : flag(f) { flag = on; }
        ~Scatter() { flag = false; }
      } scatter(scatter_, scatters_gradient());
      return evaluate(theta, data, rows);
    }();
    if (result.skipped) {
      ++skipped_;
      return result;
    }
    detail::ScopedRegion region("gradsum::step::update");
    if constexpr (detail::is_elementwise<Optimizer>::value &&
                  detail::has_optimizer_shards<Aggregation>::value) {
      if (shard_.partial(num_parameters())) {
        update_shard(theta, result);
        return result;
      }
    }
    UpdateContext<Step, Theta, Data, Rows> context(*this, theta, data, rows, result);
    optimizer_.update(context);
    space_.fence();
    return result;
  }

  /// One training step over every row of `data`.
  template <class Theta, class Data>
  StepResult operator()(const Theta& theta, const Data& data) {
    return (*this)(theta, data, data.all_rows());
  }

  /// Whether the model and loss provide second derivatives (Newton, exact
  /// line search): Model::hessian and Loss::second_derivative.
  static constexpr bool has_hessian = detail::has_model_hessian<Model, Scalar>::value &&
                                      detail::has_second_derivative<Loss, Scalar>::value;

  /// The Hessian of the objective J at `theta` over `rows`, summed over
  /// every worker like the gradient: a host P x P row-major matrix. The
  /// P x P buffers are allocated by the constructor when the optimizer
  /// declares `needs_hessian` or its `uses_hessian()` is true, else on the
  /// first call. Blocking; collective.
  template <class Theta, class Data, class Rows>
  const std::vector<double>& hessian(const Theta& theta, const Data& data, const Rows& rows) {
    static_assert(has_hessian,
                  "gradsum::Step::hessian: the Model must provide `hessian(theta, x, d2, H)` "
                  "and the Loss `second_derivative(z, k, y, d2)` (Linear and Softmax with "
                  "the library's losses do)");
    if constexpr (has_hessian) {
      if (!hessian_.allocated()) allocate_hessian();
      std::string local_error = detail::check_shapes(model_, theta, data, rows);
      if (local_error.empty())
        local_error = detail::gather_limit("gradsum::Step::hessian", data.features());
      if (local_error.empty()) local_error = check_data_(space_, model_, loss_, data);
      return hessian_.assemble(space_, model_, loss_, reduction_, workers_, aggregation_,
                               objective_, theta, data, rows, local_error);
    }
    return hessian_.matrix();
  }

  /// The Hessian over a single micro-batch; with several (gradient
  /// accumulation) every rank throws the same gradsum::Error before any
  /// collective: Newton and exact line search need one batch.
  template <class Theta, class Data, class Rows>
  const std::vector<double>& hessian(const Theta& theta, const Data& data,
                                     const MicroBatches<Rows>& micro) {
    if (micro.parts.size() == 1) return hessian(theta, data, micro.parts[0]);
    fail("gradsum::Step::hessian: optimizer ", optimizer_.name(),
                 " needs the Hessian, which gradient accumulation (MicroBatches) does not "
                 "provide; use accumulate = 1");
  }

  /// Host round trips for optimizers that solve on the host (Newton,
  /// exact line search), through one host buffer allocated by the
  /// constructor. Blocking.
  template <class View>
  void copy_to_host(const View& v, std::vector<double>& out) {
    detail::copy_to_host(space_, host_vector_, v, out);
  }
  template <class View>
  void copy_from_host(const std::vector<double>& in, const View& v) {
    detail::copy_from_host(space_, host_vector_, in, v);
  }

  /// Measures worker statistics from the next evaluation on (see StepResult::workers and
  /// below): every rank sums its rows in `parts_per_rank` contiguous parts, each part one
  /// worker (with MicroBatches, every micro-batch is one worker instead). It costs one norm
  /// over the P sums per worker and four more values in the message the step sends anyway:
  /// never a second pass over the data, nor another collective. With the same global batch
  /// and parts, the estimates are the same whatever the number of ranks (up to rounding):
  /// use parts_per_rank = W / ranks for W workers in all. 0 stops measuring. Needs a
  /// reduction that rounds each worker's sum (Sum, Compensated). Call it on every rank alike.
  void measure_workers(int parts_per_rank) {
    detail::check_measure_workers(parts_per_rank, gradient_, aggregation_, workers_,
                                  reduction_.name());
    local_.watch().set_parts(parts_per_rank);
  }
  /// Parts per rank measure_workers() set (0: not measuring).
  int worker_parts() const { return local_.watch().parts(); }
  /// Names outlier workers from the next evaluation on (StepResult::outliers; the score,
  /// `threshold`: train/detail/worker_watch.hpp): measure_workers(parts_per_rank) and 3 more
  /// values per worker in the message, no collective of its own. Needs 3 workers or more; 0
  /// stops. Call it on every rank with the same values (refused alike there).
  void watch_workers(int parts_per_rank, double threshold = 3) {
    if (parts_per_rank != 0) measure_workers(parts_per_rank);
    local_.watch().watch(parts_per_rank, threshold, aggregation_.size(), aggregation_.rank());
    size_message();
  }

  /// The gradient of J from the last evaluation (length P). After a
  /// training step that reduce-scattered it (scatters_gradient()), only
  /// this rank's block optimizer_shard() holds the gradient of J (clipped
  /// there when the optimizer clips); evaluate() always gives all of it.
  parameters_view gradient() const { return gradient_view_; }
  /// The summed gradient (P values), then the summed loss, the sample
  /// count and the number of failed workers (0), from the last
  /// evaluation, over every worker (after a training step that
  /// reduce-scattered the gradient, its sums on this rank's block alone).
  /// Counts are exact up to 2^53 samples in double and 2^24 in float.
  parameters_view sums() const { return message_.sums(); }
  /// Whether a training step (operator()) reduce-scatters the gradient
  /// (ZeRO stage 1 as published): the aggregation shards the optimizer
  /// state over more than one rank and offers it (Allreduce with a flat
  /// sum), the optimizer is elementwise, the workers' sums are rounded sums
  /// (Sum, Compensated; not Reproducible's integer sums) and no worker
  /// statistics are measured. Each rank then receives the sums of its
  /// block alone and finalizes it; the norms come from parts of fixed
  /// blocks (train/detail/ordered_norms.hpp), so the parameters are the
  /// bits of the step that sums everything in rank order.
  bool scatters_gradient() const {
    if constexpr (detail::has_reduce_scatter<Aggregation>::value &&
                  detail::is_elementwise<Optimizer>::value)
      return aggregation_.reduce_scatters() && shard_.partial(num_parameters()) &&
             workers_.adds_rounded_sums() && local_.watch().parts() == 0;
    else
      return false;
  }

  const ExecutionSpace& space() const { return space_; }
  const Model& model() const { return model_; }
  const Loss& loss() const { return loss_; }
  Optimizer& optimizer() { return optimizer_; }
  /// The gradient and reduction policies (run-time knobs included).
  const Gradient& gradient_policy() const { return gradient_; }
  const Reduction& reduction() const { return reduction_; }
  /// Steps skipped because of a non-finite loss or gradient (NonFinite::skip).
  std::int64_t skipped_steps() const { return skipped_; }
  /// The optimizer's state vectors: state_size(P) x P, or state_size(P) x
  /// the block optimizer_shard() when the aggregation shards the state.
  state_view optimizer_state() const { return state_; }
  /// The parameters whose optimizer state this worker keeps and updates:
  /// [0, P) unless the aggregation shards the state (ZeRO stage 1, see
  /// Allreduce::shard_optimizer), then this rank's block.
  const ParameterShard& optimizer_shard() const { return shard_; }
  const Objective& objective() const { return objective_; }
  Aggregation& aggregation() { return aggregation_; }

 private:
  // The optimizer's update of this worker's block of theta (sharded
  // optimizer state), then every worker's block copied to every worker.
  // The gradient of J outside the block is left as evaluate() made it.
  // Collective.
  template <class Theta>
  void update_shard(const Theta& theta, const StepResult& result) {
    const auto block = Kokkos::make_pair(shard_.begin, shard_.end);
    const auto mine = Kokkos::subview(theta, block);
    const auto g = Kokkos::subview(gradient_view_, block);
    ShardUpdateContext<Step, decltype(mine), decltype(g)> context(space_, mine, g, state_, result);
    optimizer_.update(context);
    aggregation_.gather_shards(space_, theta);
  }

  // This worker's sums and every other worker's, in one call of the
  // reduction's workers, which decide how to add them; returns whether
  // this worker's own sums were not finite. Collective.
  template <class Theta, class Data, class Rows>
  bool sum_workers(const Theta& theta, const Data& data, const Rows& rows, bool ok) {
    static_assert(detail::check_gradient_for_reduction<Gradient, Reduction>());
    const auto sums = message_.sums();
    auto sum = [&](const auto& target) {
      auto sum_part = [&](const auto& part) { sum_part_of(target, theta, data, part, sums); };
      return local_.sum(space_, rows, sum_part, sums, gradient_view_);
    };
    auto put = [&](const auto& message) { local_.watch().put(message); };
    // The count the mean divides by: loss terms, rows x positions per row.
    const std::int64_t count = rows.size() * detail::positions_per_row(model_);
    const auto local = detail::local_part(ok, count, sum, put, local_.one_pass(rows));
    if constexpr (detail::has_reduce_scatter<Aggregation>::value) {
      struct Scatter {  // the next sum scattered, even if it throws
        Aggregation& aggregation;
        Scatter(Aggregation& a, std::size_t n) : aggregation(a) { a.reduce_scatter_next(n); }
        ~Scatter() { aggregation.reduce_scatter_next(0); }
      } scatter(aggregation_, scatter_ ? std::size_t(num_parameters()) : 0);
      return workers_.sum(space_, reduction_, aggregation_, local, message_);
    } else {
      return workers_.sum(space_, reduction_, aggregation_, local, message_);
    }
  }

  // The gradient policy's sums over `part` into `sums` (by `target`, a
  // reduction), the loss alone while evaluate_loss() runs.
  template <class Target, class Theta, class Data, class Part, class Sums>
  void sum_part_of(const Target& target, const Theta& theta, const Data& data, const Part& part,
                   const Sums& sums) {
    if constexpr (loss_without_gradient) {
      if (loss_only_) {
        gradient_.sum_loss(space_, model_, loss_, target, theta, data, part, sums, work_);
        return;
      }
    }
    gradient_.sum(space_, model_, loss_, target, theta, data, part, sums, work_);
  }

  // The objective J and its gradient from the aggregated sums of `count`
  // samples, with the workers' statistics when measured. Blocking.
  template <class Theta>
  StepResult objective_at(const Theta& theta, std::int64_t count) {
    const int P = num_parameters();
    const double scale = objective_.mean ? 1.0 / double(count) : 1.0;
    using Functor = detail::ObjectiveGradient<detail::regularization_t<Model>, Scalar,
                                              parameters_view, Theta, parameters_view>;
    Kokkos::View<Scalar*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> norms(
        host_norms_.data(), 2);
    const Functor finalize{2, detail::regularization_of(model_), message_.sums(), theta,
                           gradient_view_, Scalar(scale),
                           Scalar(objective_.l2)};
    // The norms: over this rank's block alone after a reduce-scatter, the
    // other blocks' parts gathered (train/detail/ordered_norms.hpp).
    const auto gather = [&](const Norms& parts) {
      if constexpr (detail::has_reduce_scatter<Aggregation>::value)
        if (scatter_) aggregation_.gather_blocks(parts.host_parts(), parts.block_bounds());
      (void)parts;
    };
    const int rank = aggregation_.rank();
    workers_.reduce_two(space_, reduction_, "gradsum::step::finalize", P, finalize, norms_,
                        scatter_ ? rank : 0, scatter_ ? rank + 1 : aggregation_.size(), gather,
                        norms);
    StepResult result;
    result.loss = double(message_.slot(Slot::loss)) * scale + objective_.l2 / 2 * double(norms(1));
    result.gradient_norm = std::sqrt(double(norms(0)));
    result.count = count;
    if (local_.watch().parts() > 0)
      local_.watch().finish(space_, message_.sums(), model_, theta, objective_.l2, scale,
                            message_.slots(), result);
    if (!std::isfinite(result.loss) || !std::isfinite(result.gradient_norm)) {
      // Finite on every worker but not in total: the sum overflowed. Every
      // rank holds the same values, so every rank decides the same way.
      if (objective_.on_nonfinite == NonFinite::skip) {
        result.skipped = true;
        return result;
      }
      fail("gradsum::Step::evaluate: the objective or its gradient is not finite "
                   "after summing over workers (loss ", result.loss, ", gradient norm ",
                   result.gradient_norm, "); every worker's own sum was finite");
    }
    return result;
  }

  // The result of a step skipped because a worker's own sums are not finite.
  static StepResult skipped(std::int64_t count) {
    StepResult result;
    result.loss = result.gradient_norm = std::nan("");
    result.count = count;
    result.skipped = true;
    return result;
  }

  void size_message() {
    message_.resize(aggregation_, num_parameters(), local_.watch().message_slots());
  }

  void allocate_hessian() {
    hessian_.allocate(num_parameters(), std::size_t(num_parameters()) + Slot::size, aggregation_,
                      workers_);
  }

  // The gradient policy's workspace, and the layer-wise or network path's
  // panels where the step takes it.
  std::size_t workspace_size() const {
    std::size_t panels = layerwise() ? detail::layerwise_workspace_size(model_) : 0;
    if constexpr (detail::is_network<Model>::value)
      if (gradient_path() == GradientPath::network)
        panels = detail::network_workspace_size(model_);
    return gradient_.workspace_size(num_parameters()) + panels;
  }

  ExecutionSpace space_;
  Model model_;
  Loss loss_;
  Optimizer optimizer_;
  Objective objective_;
  Gradient gradient_;
  Reduction reduction_;
  Aggregation aggregation_;
  detail::StepMessage<Scalar, memory_space> message_;  // P sums, then detail::StepSlot's
  parameters_view gradient_view_;
  parameters_view work_;  // the gradient policy's workspace
  Kokkos::View<Scalar[2], Kokkos::HostSpace> host_norms_;
  using Norms = detail::OrderedNorms<Scalar, memory_space>;
  Norms norms_;  // the finalizing pass's norms, in a fixed order of parts
  Kokkos::View<Scalar*, Kokkos::HostSpace> host_vector_;
  state_view state_;
  ParameterShard shard_;
  Workers workers_;
  detail::LocalSums<Scalar, memory_space> local_;  // this worker's sums, the worker watch
  detail::HessianSums<Scalar, memory_space> hessian_;
  detail::DataCheck check_data_;
  std::int64_t skipped_ = 0;
  bool loss_only_ = false;  // evaluate_loss() is running
  bool scatter_ = false;    // operator()'s evaluate() reduce-scatters (scatters_gradient())
};

/// Builds a Step, deducing the policy types from the arguments:
/// `auto step = gradsum::make_step<double>(space, Linear(d), SquaredError{}, SGD{0.1});`
template <class Scalar, class ExecutionSpace, class Model, class Loss,
          class Optimizer = SGD, class Gradient = Analytic,
          class Reduction = Sum, class Aggregation = Local>
Step<ExecutionSpace, Scalar, Model, Loss, Optimizer, Gradient, Reduction, Aggregation>
make_step(const ExecutionSpace& space, const Model& model, const Loss& loss,
          const Optimizer& optimizer = {}, const Objective& objective = {},
          const Gradient& gradient = {}, const Reduction& reduction = {},
          const Aggregation& aggregation = {}) {
  return {space, model, loss, optimizer, objective, gradient, reduction, aggregation};
}

}  // namespace gradsum
