// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// AdamW: Adam with decoupled weight decay on by default.

#include <gradsum/optimizer/adam.hpp>

#include <cstdint>

namespace gradsum {

/// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization",
/// ICLR 2019): weight decay that shrinks every parameter by
/// lr * lambda * theta outside the adaptive scaling, instead of adding
/// lambda theta to the gradient (which the scaling would distort). The
/// update is Adam's (optimizer/adam.hpp, whose decay is decoupled too),
/// with weight_decay = 0.01 by default.
struct AdamW {
  double lr = 0.001;           ///< learning rate, > 0
  double beta1 = 0.9;          ///< first-moment decay, in [0, 1)
  double beta2 = 0.999;        ///< second-moment decay, in [0, 1)
  double eps = 1e-8;           ///< added to the denominator, > 0
  double weight_decay = 0.01;  ///< decoupled decay lambda >= 0
  std::int64_t t = 0;          ///< updates done so far (saved by checkpoints)

  static const char* name() { return "adamw"; }
  /// Each parameter's update reads its own gradient and state alone.
  static constexpr bool elementwise = true;
  void validate() const { detail::adam_validate(*this, "AdamW"); }
  /// Two state vectors: the moments m and v.
  static int state_size(int /*num_parameters*/) { return 2; }
  /// The state row that averages squares (v), never negative (checked on
  /// loading).
  static int squares_row() { return 1; }
  template <class Context>
  void update(Context& ctx) {
    detail::adam_update(*this, ctx, "gradsum::optimizer::adamw");
  }
};

}  // namespace gradsum
