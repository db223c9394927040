// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Residual<L>: out = in + L(in), the skip connection of a transformer
/// block, itself a layer (model/layer.hpp). Backward: din = dout +
/// dL(in)/din, one pass added to the inner layer's input gradient.

#include <gradsum/core/error.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/detail/panel_add.hpp>

#include <cstddef>
#include <string>

namespace gradsum {

/// A layer plus its input. The inner layer must give as many values per
/// row as it takes (checked when constructed).
template <class Inner>
class Residual {
 public:
  /// Wraps `inner`; different input and output widths are a gradsum::Error.
  explicit Residual(const Inner& inner) : inner_(inner) {
    if (inner.input_width() != inner.output_width())
      fail("gradsum::Residual: ", inner.describe(), " takes ", inner.input_width(),
           " values per row and gives ", inner.output_width(),
           "; a residual connection adds its input to its output, so they must be equal");
  }

  /// The wrapped layer.
  const Inner& inner() const { return inner_; }

  int num_parameters() const { return inner_.num_parameters(); }
  int input_width() const { return inner_.input_width(); }
  int output_width() const { return inner_.output_width(); }
  /// The inner layer's workspace and its output.
  std::size_t workspace_size(Tokens t) const {
    return inner_.workspace_size(t) + std::size_t(t.rows()) * std::size_t(output_width());
  }
  /// "residual(inner)".
  std::string describe() const { return "residual(" + inner_.describe() + ")"; }

  /// The inner layer into the workspace, then out = in + that. Asynchronous.
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar* work) const {
    const LayerOutput<Scalar, Memory> inner_out = inner_output<Scalar, Memory>(work, t);
    inner_.forward(space, theta, t, in, inner_out, work);
    detail::add_panels(space, "gradsum::layer::residual::add", in.data(), inner_out.data(),
                       out.data(), t.rows() * output_width());
  }

  /// The inner layer's backward, then din += dout. Asynchronous.
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
                LayerInput<Scalar, Memory> /*out*/, LayerInput<Scalar, Memory> dout, Scalar* g,
                LayerOutput<Scalar, Memory> din, Scalar* work) const {
    inner_.backward(space, theta, t, in, LayerInput<Scalar, Memory>(inner_output<Scalar, Memory>(work, t)), dout, g,
                    din, work);
    if (din.data() != nullptr)
      detail::add_panels(space, "gradsum::layer::residual::add_gradient",
                         static_cast<const Scalar*>(din.data()), dout.data(), din.data(),
                         t.rows() * input_width());
  }

 private:
  // The inner layer's output, after its own workspace.
  template <class Scalar, class Memory>
  LayerOutput<Scalar, Memory> inner_output(Scalar* work, Tokens t) const {
    return LayerOutput<Scalar, Memory>(work + inner_.workspace_size(t), std::size_t(t.rows()),
                                       std::size_t(output_width()));
  }
  Inner inner_;
};

}  // namespace gradsum
