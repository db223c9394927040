// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The step's message: P gradient sums, then the slots of StepSlot, then
/// those the worker watch adds, so that one aggregation carries all; its
/// buffer and the host copies of its slots.

#include <gradsum/core/kokkos_compat.hpp>

#include <cstddef>

namespace gradsum {
namespace detail {

/// The slots after the P gradient sums, in the message's order.
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
    size             ///< the worker watch's slots follow
  };
};

/// The message buffer (P sums, then StepSlot's slots, then `extra` more)
/// and the host copies of its slots: what this worker puts from
/// StepSlot::count on, and what every worker's aggregated message holds
/// from StepSlot::loss on. Allocated by resize(); nothing else allocates.
template <class Scalar, class Memory>
class StepMessage {
 public:
  using sums_view = Kokkos::View<Scalar*, Memory>;

  /// Sizes the message for P sums and `extra` slots after StepSlot's, and
  /// the aggregation's buffers for it; keeps them when the size is the same.
  template <class Aggregation>
  void resize(Aggregation& aggregation, int P, int extra) {
    const int tail = StepSlot::size + extra;
    P_ = P;
    if (sums_.extent(0) == std::size_t(P + tail)) return;
    sums_ = sums_view("gradsum::step::sums", std::size_t(P + tail));
    read_ = host_view("gradsum::step::read", std::size_t(tail));
    write_ = host_view("gradsum::step::write", std::size_t(tail - StepSlot::count));
    aggregation.template allocate<Scalar, Memory>(std::size_t(P + tail));
  }

  /// P, the number of gradient sums.
  int num_parameters() const { return P_; }
  /// The whole message: P sums, then the slots.
  const sums_view& sums() const { return sums_; }

  /// Sets this worker's slot `slot` (StepSlot::count or a later one) to
  /// `value`, sent by write_slots().
  void put(int slot, double value) const { write_(slot - StepSlot::count) = Scalar(value); }
  /// Sets every slot from StepSlot::count on to zero.
  void clear_slots() const { Kokkos::deep_copy(write_, Scalar(0)); }
  /// Copies the slots put into the message. Asynchronous.
  template <class Space>
  void write_slots(const Space& space) const {
    Kokkos::deep_copy(space, Kokkos::subview(sums_, Kokkos::make_pair(P_ + int(StepSlot::count),
                                                                      int(sums_.extent(0)))),
                      write_);
  }

  /// Reads the aggregated message's slots, from StepSlot::loss on. Blocking.
  template <class Space>
  void read_slots(const Space& space) const {
    Kokkos::deep_copy(space, read_, Kokkos::subview(sums_, Kokkos::make_pair(P_, int(sums_.extent(0)))));
    space.fence();
  }
  /// The aggregated slot `slot` after read_slots().
  Scalar slot(int slot) const { return read_(slot); }
  /// The aggregated slots from StepSlot::loss on, after read_slots().
  const Scalar* slots() const { return read_.data(); }

 private:
  using host_view = Kokkos::View<Scalar*, Kokkos::HostSpace>;
  int P_ = 0;
  sums_view sums_;
  host_view read_, write_;
};

}  // namespace detail
}  // namespace gradsum
