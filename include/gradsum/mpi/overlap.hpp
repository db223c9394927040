// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Allreduce::Overlap: a step's message summed in buckets while the
/// backward pass runs. It listens to the backward pass
/// (model/detail/backward_progress.hpp) and starts each bucket of the
/// gradient on Allreduce's rank-order engine (mpi/buckets.hpp) as soon as
/// the layers behind it have finished. mpi/allreduce.hpp includes this
/// file after Allreduce.

#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/mpi/allreduce.hpp>
#include <gradsum/mpi/buckets.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <vector>

namespace gradsum {

/// A step's message summed in buckets while the backward pass runs
/// (Allreduce::overlap). Listens to the backward pass from construction to
/// local_nonfinite() or finish(); not copied or moved.
template <class ExecutionSpace, class View>
class Allreduce::Overlap final : public detail::BackwardListener {
 public:
  using Scalar = typename View::non_const_value_type;

  Overlap(Allreduce& owner, const ExecutionSpace& space, const View& buffer, std::size_t gradient,
          bool listen)
      : owner_(owner),
        space_(space),
        data_(buffer.data()),
        length_(buffer.extent(0)),
        gradient_(gradient),
        frontier_(gradient),
        engine_(owner.bucketed_->template engine<Scalar>()),
        plan_(owner.bucketed_->plan) {
    static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                             typename View::memory_space>::accessible,
                  "gradsum::Allreduce::overlap: the host must be able to read the buffer");
    Scalar* room = owner.bucketed_->template prepare<Scalar>(length_, gradient, owner.buckets_);
    engine_.begin(data_, room, owner.bucketed_->nodes.lanes());
    if (listen) {
      previous_ = detail::backward_listener();
      detail::backward_listener() = this;
      listening_ = true;
    }
  }
  ~Overlap() { stop(); }
  Overlap(const Overlap&) = delete;
  Overlap& operator=(const Overlap&) = delete;

  /// Starts the gradient's buckets that now lie wholly at or after `first`
  /// (fencing the space first), and moves the started ones on.
  void final_from(const void* first) override {
    const std::ptrdiff_t at = static_cast<const Scalar*>(first) - data_;
    if (at >= 0 && std::size_t(at) < frontier_) {
      frontier_ = std::size_t(at);
      bool fenced = false;
      while (next_ < plan_.size() && plan_[next_].end <= gradient_ &&
             plan_[next_].begin >= frontier_) {
        if (!fenced) space_.fence();
        fenced = true;
        send(plan_[next_++], true);
        if (frontier_ > 0) ++owner_.bucketed_->early;  // layers still to run
      }
    }
    engine_.progress();
  }

  /// Stops listening; whether this rank's own gradient or loss (the first
  /// gradient + 1 values) holds a value that is not finite, the buckets
  /// already started included. Fences the space.
  bool local_nonfinite() {
    stop();
    space_.fence();
    // The gradient's buckets not started yet are [0, below).
    const std::size_t below =
        next_ < plan_.size() && plan_[next_].end <= gradient_ ? plan_[next_].end : 0;
    for (std::size_t j = 0; j < below && j < gradient_; ++j)
      if (!is_finite(data_[j])) nonfinite_ = true;
    if (gradient_ < length_ && !is_finite(data_[gradient_])) nonfinite_ = true;
    checked_ = true;
    return nonfinite_;
  }

  /// Starts the buckets left (the slots last) and waits until every one is
  /// summed on every rank. Fences the space. Collective.
  void finish() {
    stop();
    space_.fence();
    while (next_ < plan_.size()) send(plan_[next_++], false);
    engine_.finish();
    ++*owner_.calls_;
    owner_.scatter_ = 0;
  }

 private:
  static bool is_finite(Scalar x) { return x == x && x - x == Scalar(0); }

  void send(const mpi::detail::BucketRange& range, bool check) {
    if (check && !checked_)
      for (std::size_t j = range.begin; j < range.end; ++j)
        if (!is_finite(data_[j])) nonfinite_ = true;
    owner_.start_bucket(engine_, range);
  }
  void stop() {
    if (!listening_) return;
    detail::backward_listener() = previous_;
    listening_ = false;
  }

  Allreduce& owner_;
  ExecutionSpace space_;
  Scalar* data_;
  std::size_t length_, gradient_, frontier_;
  mpi::detail::RankOrderSum<Scalar>& engine_;
  const std::vector<mpi::detail::BucketRange>& plan_;
  std::size_t next_ = 0;
  bool listening_ = false, nonfinite_ = false, checked_ = false;
  detail::BackwardListener* previous_ = nullptr;
};

}  // namespace gradsum
