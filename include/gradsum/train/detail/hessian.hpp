// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The Hessian of the objective summed over every worker, for Newton and
/// exact line searches, with the buffers it needs.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/train/objective.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradsum {
namespace detail {

/// One sample's Hessian contribution J^T (d^2 l / dz^2) J.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct HessianBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const std::int64_t r = this->rows(i);
    FeatureRoom<X> room;
    const Scalar* xi = room.row(this->x, r);
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar d2[capacity * capacity] = {};
    this->model.forward(this->theta, xi, z);
    this->loss.second_derivative(z, this->model.num_outputs(), this->y(r), d2);
    this->model.hessian(this->theta, xi, d2, acc);
  }
};

/// The P x P Hessian of J over every worker's rows, and its buffers: P^2
/// sums, then the sample count and the number of failed workers, in one
/// message.
template <class Scalar, class Memory>
class HessianSums {
 public:
  bool allocated() const { return sums_.extent(0) > 0; }
  /// The last matrix assemble() returned.
  const std::vector<double>& matrix() const { return hessian_; }

  /// Buffers for `P` parameters; the aggregation's message grows to the
  /// Hessian's or `step_message` values, whichever is larger, and
  /// `workers` reserves room for P^2 coordinates.
  template <class Aggregation, class Workers>
  void allocate(int P, std::size_t step_message, Aggregation& aggregation, Workers& workers) {
    const std::size_t PP = std::size_t(P) * std::size_t(P);
    sums_ = Kokkos::View<Scalar*, Memory>("gradsum::step::hessian", PP + slots);
    host_ = Kokkos::create_mirror_view(Kokkos::HostSpace(), sums_);
    host_tail_ = Kokkos::View<Scalar[slots], Kokkos::HostSpace>("gradsum::step::hessian_tail");
    workers.reserve(PP);
    aggregation.template allocate<Scalar, Memory>(PP + slots > step_message ? PP + slots
                                                                            : step_message);
  }

  /// The Hessian of J at `theta` over `rows` (when `local_error` is empty;
  /// else this worker contributes nothing and every worker throws), a
  /// host P x P row-major matrix. Blocking; collective.
  template <class Space, class Model, class Loss, class Reduction, class Workers,
            class Aggregation, class Theta, class Data, class Rows>
  const std::vector<double>& assemble(const Space& space, const Model& model, const Loss& loss,
                                      const Reduction& reduction, const Workers& workers,
                                      Aggregation& aggregation, const Objective& objective,
                                      const Theta& theta, const Data& data, const Rows& rows,
                                      const std::string& local_error) {
    const int P = model.num_parameters();
    const std::size_t PP = std::size_t(P) * std::size_t(P);
    ScopedRegion region("gradsum::step::hessian");
    auto tail = Kokkos::subview(sums_, Kokkos::make_pair(PP, PP + slots));
    if (local_error.empty()) {
      using Body = HessianBody<Model, Loss, Scalar, typename Data::features_view,
                               typename Data::targets_view, Rows>;
      const Body body{{model, loss, theta.data(), data.features(), data.targets(), rows}};
      workers.reduce(space, reduction, "gradsum::step::hessian", rows.size(), int(PP), body,
                     sums_);
      host_tail_(count) = Scalar(rows.size());
      host_tail_(failed) = Scalar(0);
    } else {
      Kokkos::deep_copy(space, sums_, Scalar(0));
      host_tail_(count) = Scalar(0);
      host_tail_(failed) = Scalar(1);
    }
    Kokkos::deep_copy(space, tail, host_tail_);
    aggregate_leading(aggregation, space, sums_, std::int64_t(PP), std::int64_t(PP + count));
    Kokkos::deep_copy(space, host_, sums_);
    space.fence();
    if (host_(PP + failed) > Scalar(0)) throw AgreedError(aggregation.first_error(local_error));
    const double n = double(host_(PP + count));
    if (!(n > 0)) fail("gradsum::Step::hessian: the batch holds no samples on any worker");
    const double scale = objective.mean ? 1.0 / n : 1.0;
    hessian_.resize(PP);
    for (std::size_t e = 0; e < PP; ++e) hessian_[e] = scale * double(host_(e));
    for (int j = 0; j < P; ++j)
      if (model.is_regularized(j)) hessian_[std::size_t(j) * P + j] += objective.l2;
    return hessian_;
  }

 private:
  enum : int { count, failed, slots };  // the message's tail after the P^2 sums
  Kokkos::View<Scalar*, Memory> sums_;
  typename Kokkos::View<Scalar*, Memory>::HostMirror host_;
  Kokkos::View<Scalar[slots], Kokkos::HostSpace> host_tail_;
  std::vector<double> hessian_;
};

}  // namespace detail
}  // namespace gradsum
