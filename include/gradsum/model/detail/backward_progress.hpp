// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a backward pass tells who is listening that part of the gradient is
/// final: a composition (Sequential, Repeated) reports, after each of its
/// layers' backward, that every gradient entry from that layer's slice on
/// is final (its parameters lie after the earlier layers', and the
/// backward runs last layer first); a layer may report its own slice
/// sooner, before work that no longer changes it (Dense, before the
/// product for its input's gradient). The network path lets the reports of
/// a step's last panel through (earlier panels still add); a bucketed
/// aggregation (mpi/allreduce.hpp) listens to start sending the gradient
/// while the backward pass runs. Reports come from the host thread that
/// launches the kernels, once per layer: a virtual call there costs
/// nothing beside the kernels. The kernels reported may still run; the
/// listener fences before it reads.

namespace gradsum {
namespace detail {

/// Told that every gradient entry at or after `first` is final.
class BackwardListener {
 public:
  virtual void final_from(const void* first) = 0;

 protected:
  ~BackwardListener() = default;
};

/// The listener of this thread's backward passes (none: nullptr).
inline BackwardListener*& backward_listener() {
  static thread_local BackwardListener* listener = nullptr;
  return listener;
}

/// Installs `listener` (nullptr: silences the reports) for its lifetime.
class ScopedBackwardListener {
 public:
  explicit ScopedBackwardListener(BackwardListener* listener) : previous_(backward_listener()) {
    backward_listener() = listener;
  }
  ~ScopedBackwardListener() { backward_listener() = previous_; }
  ScopedBackwardListener(const ScopedBackwardListener&) = delete;
  ScopedBackwardListener& operator=(const ScopedBackwardListener&) = delete;

 private:
  BackwardListener* previous_;
};

/// Reports that every gradient entry at or after `first` is final.
inline void report_final(const void* first) {
  if (BackwardListener* listener = backward_listener()) listener->final_from(first);
}

}  // namespace detail
}  // namespace gradsum
