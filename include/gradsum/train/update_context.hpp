// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// UpdateContext: the optimizer's side of the step, everything an
/// optimizer's update(context) may use.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/train/detail/step_checks.hpp>
#include <gradsum/train/objective.hpp>

#include <vector>

namespace gradsum {

/// What an optimizer's update sees: the parameters to update in place,
/// the gradient of J there, its own state vectors, and (for line searches
/// and second-order methods) evaluations of J at other points over the
/// same rows, all aggregated over every worker. Created by Step::operator().
template <class StepType, class Theta, class Data, class Rows>
class UpdateContext {
 public:
  using execution_space = typename StepType::execution_space;
  using memory_space = typename StepType::memory_space;
  using scalar_type = typename StepType::scalar_type;
  using parameters_view = typename StepType::parameters_view;

  UpdateContext(StepType& step, const Theta& theta, const Data& data, const Rows& rows,
                const StepResult& result)
      : step_(step), theta_(theta), data_(data), rows_(rows), result_(result) {}

  /// The execution space and a RangePolicy over the P parameters.
  const execution_space& space() const { return step_.space(); }
  Kokkos::RangePolicy<execution_space> policy() const {
    return Kokkos::RangePolicy<execution_space>(step_.space(), 0, num_parameters());
  }
  int num_parameters() const { return step_.num_parameters(); }
  /// The parameters theta, to be updated in place.
  const Theta& parameters() const { return theta_; }
  /// The gradient of J (at theta until evaluate() is called).
  parameters_view gradient() const { return step_.gradient(); }
  /// The optimizer's state vectors, state_size(P) x P.
  typename StepType::state_view state() const { return step_.optimizer_state(); }
  /// J, its gradient norm and the count at theta.
  const StepResult& result() const { return result_; }
  /// J and its gradient at `point` over the same rows; the gradient lands
  /// in gradient(). Blocking; collective.
  template <class Point>
  StepResult evaluate(const Point& point) {
    return step_.evaluate(point, data_, rows_);
  }
  /// Copies a P-vector of the step's memory space into `out` on the host
  /// (through a host buffer the step allocated once; `out` is resized only
  /// when its length differs). Blocking.
  template <class View>
  void to_host(const View& v, std::vector<double>& out) {
    step_.copy_to_host(v, out);
  }
  /// Copies host values into a P-vector of the step's memory space. Blocking.
  template <class View>
  void from_host(const std::vector<double>& in, const View& v) {
    step_.copy_from_host(in, v);
  }
  /// Whether hessian() is available for this model and loss.
  static constexpr bool has_hessian = StepType::has_hessian;
  /// The Hessian of J at `point`, P x P row-major on the host. Blocking;
  /// collective. Throws when the model or loss has no second derivatives.
  template <class Point>
  const std::vector<double>& hessian(const Point& point) {
    if constexpr (has_hessian) {
      return step_.hessian(point, data_, rows_);
    } else {
      throw Error(detail::missing_hessian<typename StepType::scalar_type>(
          step_.optimizer().name(), step_.model(), step_.loss()));
    }
  }
  /// Whether the loss declares J quadratic in the outputs (squared error).
  static constexpr bool is_quadratic = detail::is_quadratic_loss<typename StepType::loss_type>::value;

 private:
  StepType& step_;
  const Theta& theta_;
  const Data& data_;
  const Rows& rows_;
  StepResult result_;
};

/// What an elementwise optimizer's update sees when the step shards the
/// optimizer state (Allreduce::shard_optimizer): this worker's block of the
/// parameters and of the gradient of J, and the block's state, indexed
/// from 0; result() is the whole step's (its gradient norm included). The
/// step copies every worker's updated block to every worker afterwards.
/// Created by Step::operator().
template <class StepType, class Parameters, class Gradient>
class ShardUpdateContext {
 public:
  using execution_space = typename StepType::execution_space;
  using memory_space = typename StepType::memory_space;
  using scalar_type = typename StepType::scalar_type;

  ShardUpdateContext(const execution_space& space, const Parameters& parameters,
                     const Gradient& gradient, const typename StepType::state_view& state,
                     const StepResult& result)
      : space_(space), parameters_(parameters), gradient_(gradient), state_(state),
        result_(result) {}

  /// The execution space and a RangePolicy over the block.
  const execution_space& space() const { return space_; }
  Kokkos::RangePolicy<execution_space> policy() const {
    return Kokkos::RangePolicy<execution_space>(space_, 0, num_parameters());
  }
  /// Number of parameters in the block.
  int num_parameters() const { return int(parameters_.extent(0)); }
  /// This worker's block of the parameters, updated in place.
  const Parameters& parameters() const { return parameters_; }
  /// The same block of the gradient of J.
  const Gradient& gradient() const { return gradient_; }
  /// The optimizer's state vectors for the block, state_size(P) x block.
  const typename StepType::state_view& state() const { return state_; }
  /// J, the whole gradient's norm and the count at theta.
  const StepResult& result() const { return result_; }

 private:
  execution_space space_;
  Parameters parameters_;
  Gradient gradient_;
  typename StepType::state_view state_;
  StepResult result_;
};

}  // namespace gradsum
