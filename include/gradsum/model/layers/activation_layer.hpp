// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// ActivationLayer: out = f(in) entrywise, no parameters and no
/// workspace (the slope comes from the input, the pre-activation).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/activation.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/detail/elementwise.hpp>

#include <cstddef>
#include <string>

namespace gradsum {

/// The activation f on rows of `width` values; a layer in the sense of
/// model/layer.hpp.
class ActivationLayer {
 public:
  /// Throws gradsum::Error for a width below 1.
  ActivationLayer(int width, Activation activation) : width_(width), activation_(activation) {
    if (width < 1) fail("gradsum::ActivationLayer: width must be at least 1, got ", width);
  }

  /// The activation; no parameters, rows of `width` in and out, no workspace.
  Activation activation() const { return activation_; }
  int num_parameters() const { return 0; }
  int input_width() const { return width_; }
  int output_width() const { return width_; }
  std::size_t workspace_size(Tokens) const { return 0; }
  /// "activation(width,f)".
  std::string describe() const {
    return "activation(" + std::to_string(width_) + "," + activation_name(activation_) + ")";
  }

  /// out = f(in). Asynchronous.
  template <class Space, class Scalar>
  void forward(const Space& space, const Scalar*, Tokens t,
               LayerInput<Scalar, typename Space::memory_space> in,
               LayerOutput<Scalar, typename Space::memory_space> out, Scalar*) const {
    detail::check_panel("gradsum::ActivationLayer::forward", "in", in, t.rows(), width_);
    detail::check_panel("gradsum::ActivationLayer::forward", "out", out, t.rows(), width_);
    detail::bias_activate(space, "gradsum::layer::activation::forward", activation_, in, out,
                          static_cast<const Scalar*>(nullptr));
  }

  /// din = dout . f'(in) unless din.data() is null; no parameters to add
  /// to. Asynchronous.
  template <class Space, class Scalar>
  void backward(const Space& space, const Scalar*, Tokens t,
                LayerInput<Scalar, typename Space::memory_space> in,
                LayerInput<Scalar, typename Space::memory_space>,
                LayerInput<Scalar, typename Space::memory_space> dout, Scalar*,
                LayerOutput<Scalar, typename Space::memory_space> din, Scalar*) const {
    if (din.data() == nullptr) return;
    const char* who = "gradsum::ActivationLayer::backward";
    detail::check_panel(who, "in", in, t.rows(), width_);
    detail::check_panel(who, "dout", dout, t.rows(), width_);
    detail::check_panel(who, "din", din, t.rows(), width_);
    detail::slope_times(space, "gradsum::layer::activation::slope", activation_, dout, in, true,
                        din);
  }

 private:
  int width_ = 0;
  Activation activation_ = Activation::identity;
};

}  // namespace gradsum
