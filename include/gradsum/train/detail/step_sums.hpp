// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The step's parts that do not depend on its type: what workers agree on,
/// the checks of its policies, its buffer layout, how its sums become the
/// gradient of J, and the worker statistics it can measure on the way
/// (Step::measure_workers).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>
#include <gradsum/optimizer/detail/learning_rate.hpp>
#include <gradsum/reduction/sum.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

/// What every worker of a step must agree on: sizes, scalar type, policy
/// names, the objective and the learning rate.
template <class Scalar, class Model, class Loss, class Optimizer, class Gradient, class Reduction,
          class Aggregation>
Signature step_signature(const Model& model, const Loss& loss, const Optimizer& optimizer,
                         const Objective& objective, const Gradient& gradient,
                         const Reduction& reduction, const Aggregation& aggregation) {
  Signature sig;
  sig.add("number of parameters", model.num_parameters());
  sig.add("number of features", model.num_features());
  sig.add("number of outputs", model.num_outputs());
  if constexpr (has_architecture<Model>::value) sig.add("model architecture", model.architecture());
  sig.add("scalar size in bytes", std::int64_t(sizeof(Scalar)));
  sig.add_hash("policies", concat(model.name(), '/', loss.name(), '/', gradient.name(), '/',
                                  reduction.name(), '/', aggregation.name(), '/',
                                  optimizer.name()));
  sig.add("objective mean", objective.mean ? 1 : 0);
  sig.add_bits("objective l2", objective.l2);
  sig.add("non-finite policy", objective.on_nonfinite == NonFinite::skip ? 1 : 0);
  // Ranks updating with different rates would drift apart silently.
  const double lr = learning_rate(optimizer);
  if (!std::isnan(lr)) sig.add_bits("learning rate", lr);
  return sig;
}

/// The gradient policy's workspace, and the layer-wise path's panels where
/// the step takes it (`path`).
template <class Gradient, class Model>
std::size_t step_workspace_size(const Gradient& gradient, const Model& model, GradientPath path) {
  return gradient.workspace_size(model.num_parameters()) +
         (path == GradientPath::layerwise ? layerwise_workspace_size(model) : 0);
}

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

/// The step's aggregated buffer: P gradient sums, then these slots, so
/// that one message carries all.
struct StepSlot {
  enum : int {
    loss,            ///< the summed loss
    count,           ///< the number of samples
    failed,          ///< workers whose inputs were rejected
    nonfinite,       ///< workers whose own sums are not finite
    noise,           ///< sum over workers of ||S_w||^2 / b_w
    workers,         ///< workers that held samples
    worker_losses,   ///< sum of the workers' mean losses
    worker_squares,  ///< and of their squares
    size
  };
};

/// g(j) = scale * sum(j) + l2 * theta(j) on regularised j; accumulates
/// ||g||^2 and ||W||^2.
template <class Model, class Scalar, class Sums, class Theta, class G>
struct Finalize {
  using value_type = Scalar[];
  using size_type = int;
  int value_count;  // 2
  Model model;
  Sums sums;
  Theta theta;
  G g;
  Scalar scale;
  Scalar l2;

  KOKKOS_FUNCTION void operator()(int j, Scalar* acc) const {
    const Scalar w = model.is_regularized(j) ? theta(j) : Scalar(0);
    const Scalar gj = scale * sums(j) + l2 * w;
    g(j) = gj;
    acc[0] += gj * gj;
    acc[1] += w * w;
  }
  KOKKOS_FUNCTION void init(Scalar* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};

/// The sum of sums(j)^2 over j < n, in double. Blocking.
template <class Space, class Sums>
double sum_of_squares(const Space& space, const std::string& label, const Sums& sums, int n) {
  double total = 0;
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<Space>(space, 0, n),
      KOKKOS_LAMBDA(int j, double& acc) { acc += double(sums(j)) * double(sums(j)); }, total);
  return total;
}

/// Sizes the step's message, P sums then `tail` slots (StepSlot's, then
/// any the worker watch adds): the buffer `sums`, the host copies of its
/// slots (`read` from StepSlot::loss, `write` from StepSlot::count) and
/// the aggregation's buffers. Keeps them when the size is unchanged.
template <class Scalar, class MemorySpace, class Aggregation>
void size_message(Kokkos::View<Scalar*, MemorySpace>& sums,
                  Kokkos::View<Scalar*, Kokkos::HostSpace>& read,
                  Kokkos::View<Scalar*, Kokkos::HostSpace>& write, Aggregation& aggregation,
                  int P, int tail) {
  if (sums.extent(0) == std::size_t(P + tail)) return;
  sums = Kokkos::View<Scalar*, MemorySpace>("gradsum::step::sums", std::size_t(P + tail));
  read = Kokkos::View<Scalar*, Kokkos::HostSpace>("gradsum::step::read", std::size_t(tail));
  write = Kokkos::View<Scalar*, Kokkos::HostSpace>("gradsum::step::write",
                                                   std::size_t(tail - StepSlot::count));
  aggregation.template allocate<Scalar, MemorySpace>(std::size_t(P + tail));
}

/// total(j) += part(j) for j < total.extent(0). Asynchronous.
template <class Space, class Total, class Part>
void add_into(const Space& space, const Total& total, const Part& part) {
  Kokkos::parallel_for(
      "gradsum::step::accumulate", Kokkos::RangePolicy<Space>(space, 0, int(total.extent(0))),
      KOKKOS_LAMBDA(int j) { total(j) += part(j); });
}

/// Adds ||S||^2 and ||S / B + l2 w||^2 (w the regularised parameters)
/// term j into acc[0 … 1] (in double; an ArraySumFunctor body).
template <class Model, class Sums, class Theta>
struct NoiseNorms {
  Model model;
  Sums sums;
  Theta theta;
  double B, l2;

  KOKKOS_FUNCTION void operator()(std::int64_t j, double* acc) const {
    const double s = double(sums(j));
    const double g = s / B + (model.is_regularized(int(j)) ? l2 * double(theta(j)) : 0.0);
    acc[0] += s * s;
    acc[1] += g * g;
  }
};

/// What a step measures about its workers (see Step::measure_workers and
/// StepResult::noise_trace): each worker's summed gradient and mean loss,
/// totalled on this rank into four values that travel in the step's
/// message (StepSlot::noise …), then turned into the result's statistics.
template <class Scalar>
class WorkerStatistics {
 public:
  /// Parts per rank, 0 when not measuring.
  int parts() const { return parts_; }
  void set_parts(int parts) {
    if (parts > 0 && host_loss_.data() == nullptr)
      host_loss_ = Kokkos::View<Scalar, Kokkos::HostSpace>("gradsum::step::worker_loss");
    parts_ = parts;
  }
  /// Forgets this rank's totals (a new evaluation).
  void clear() {
    for (double& v : totals_) v = 0;
    added_ = 0;
    finite_ = false;
  }
  /// Whether this evaluation added one worker alone and its norm and loss
  /// were finite: then its P + 1 sums, the rank's, are all finite.
  bool lone_worker_finite() const { return added_ == 1 && finite_; }
  /// This rank's totals, in the order of StepSlot::noise ….
  double total(int k) const { return totals_[k]; }

  /// Adds the worker of `b` samples whose gradient and loss sums `sums`
  /// holds (P values, then the loss). Blocking.
  template <class Space, class Sums>
  void add(const Space& space, const Sums& sums, int P, std::int64_t b) {
    if (b <= 0) {  // a worker without samples says nothing about the noise
      ++added_;
      return;
    }
    add(space, sums, P, b, sum_of_squares(space, "gradsum::step::worker_norm", sums, P));
  }
  /// add, given norm2 = ||S_w||^2 (the P gradient sums' squared norm).
  template <class Space, class Sums>
  void add(const Space& space, const Sums& sums, int P, std::int64_t b, double norm2) {
    Kokkos::deep_copy(space, host_loss_, Kokkos::subview(sums, P));
    space.fence();
    const double loss = double(host_loss_()) / double(b);
    ++added_;
    finite_ = std::isfinite(norm2) && std::isfinite(loss);
    totals_[0] += norm2 / double(b);
    totals_[1] += 1;
    totals_[2] += loss;
    totals_[3] += loss * loss;
  }

  /// The worker statistics of `result` from the aggregated sums (P
  /// gradient values), the aggregated totals `tail` (StepSlot order, from
  /// StepSlot::loss on) and the step's gradient g = scale S + l2 w, whose
  /// norm `result` holds. Blocking.
  template <class Space, class Sums, class Model, class Theta>
  static void finish(const Space& space, const Sums& sums, const Model& model, const Theta& theta,
                     double l2, double scale, const Scalar* tail, StepResult& result) {
    const double W = double(tail[StepSlot::workers]), B = double(result.count);
    result.workers = std::int64_t(W);
    if (W < 2) return;
    const double mean = double(tail[StepSlot::worker_losses]) / W;
    result.worker_loss_spread = std::sqrt(
        std::fmax(0.0, (double(tail[StepSlot::worker_squares]) - W * mean * mean) / (W - 1)));
    // ||S||^2 and ||S / B + l2 w||^2: without an L2 term, from ||g||^2 (in
    // double, as precise as a pass); else in one pass.
    double norms[2] = {0, 0};
    if (std::is_same<Scalar, double>::value && l2 == 0) {
      norms[0] = result.gradient_norm * result.gradient_norm / (scale * scale);
      norms[1] = norms[0] / (B * B);
    } else {
      Kokkos::parallel_reduce(
          "gradsum::step::worker_statistics",
          Kokkos::RangePolicy<Space>(space, 0, model.num_parameters()),
          ArraySumFunctor<double, NoiseNorms<Model, Sums, Theta>>{2, {model, sums, theta, B, l2}},
          Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(norms,
                                                                                           2));
    }
    const double sum2 = norms[0], mean2 = norms[1];
    result.noise_trace = (double(tail[StepSlot::noise]) - sum2 / B) / (W - 1);
    result.gradient_norm2_estimate = mean2 - result.noise_trace / B;
  }

 private:
  int parts_ = 0, added_ = 0;
  bool finite_ = false;
  double totals_[4] = {};
  Kokkos::View<Scalar, Kokkos::HostSpace> host_loss_;
};

}  // namespace detail
}  // namespace gradsum
