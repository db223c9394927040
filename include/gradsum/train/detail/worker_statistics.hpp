// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What a step measures about its workers (Step::measure_workers): each
/// worker's summed gradient and mean loss, totalled on each rank into four
/// slots of the step's message, and from the aggregated totals the noise
/// and spread estimates of StepResult.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/sum.hpp>
#include <gradsum/train/detail/objective_gradient.hpp>
#include <gradsum/train/detail/step_message.hpp>
#include <gradsum/train/objective.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

/// The sum of sums(j)^2 over j < n, in double. Blocking.
template <class Space, class Sums>
double sum_of_squares(const Space& space, const std::string& label, const Sums& sums, int n) {
  double total = 0;
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<Space>(space, 0, n),
      KOKKOS_LAMBDA(int j, double& acc) { acc += double(sums(j)) * double(sums(j)); }, total);
  return total;
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
    noise_ = workers_ = losses_ = squares_ = 0;
    added_ = 0;
    finite_ = false;
  }
  /// Whether this evaluation added one worker alone and its norm and loss
  /// were finite: then its P + 1 sums, the rank's, are all finite.
  bool lone_worker_finite() const { return added_ == 1 && finite_; }
  /// Puts this rank's totals into their slots of `message` (StepMessage).
  template <class Message>
  void put(const Message& message) const {
    message.put(StepSlot::noise, noise_);
    message.put(StepSlot::workers, workers_);
    message.put(StepSlot::worker_losses, losses_);
    message.put(StepSlot::worker_squares, squares_);
  }

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
    noise_ += norm2 / double(b);
    workers_ += 1;
    losses_ += loss;
    squares_ += loss * loss;
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
          ArraySumFunctor<double, NoiseNorms<regularization_t<Model>, Sums, Theta>>{
              2, {regularization_of(model), sums, theta, B, l2}},
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
  // This rank's totals of the slots StepSlot::noise … worker_squares.
  double noise_ = 0, workers_ = 0, losses_ = 0, squares_ = 0;
  Kokkos::View<Scalar, Kokkos::HostSpace> host_loss_;
};

}  // namespace detail
}  // namespace gradsum
