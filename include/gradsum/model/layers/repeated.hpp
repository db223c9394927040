// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Repeated<L>: `count` copies of a layer applied one after the other,
/// each with parameters of its own (a transformer's blocks), itself a
/// layer (model/layer.hpp). Copy k's parameters are the k-th slice of
/// L's size; the workspace holds each copy's own workspace, each inner
/// copy's output and two buffers that hand the input's gradient back.

#include <gradsum/core/error.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/layer.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {

/// `count` copies of `Block`, which must give as many values per row as it
/// takes.
template <class Block>
class Repeated {
 public:
  /// `count` >= 1 copies of `block`; anything else, or a block whose
  /// widths differ, is a gradsum::Error.
  Repeated(int count, const Block& block) : count_(count), block_(block) {
    if (count < 1) fail("gradsum::Repeated: ", count, " copies of ", block.describe(), "; expected 1 or more");
    if (block.input_width() != block.output_width())
      fail("gradsum::Repeated: ", block.describe(), " takes ", block.input_width(),
           " values per row and gives ", block.output_width(),
           "; a repeated block's output is the next copy's input, so they must be equal");
  }

  /// The repeated layer and how many copies.
  const Block& block() const { return block_; }
  int count() const { return count_; }

  int num_parameters() const { return count_ * block_.num_parameters(); }
  int input_width() const { return block_.input_width(); }
  int output_width() const { return block_.output_width(); }
  std::size_t workspace_size(Tokens t) const {
    return std::size_t(count_) * copy_size(t) + 2 * panel_size(t);
  }
  /// "repeated(count, block)".
  std::string describe() const {
    return "repeated(" + std::to_string(count_) + ", " + block_.describe() + ")";
  }

  /// Each copy's forward, in order. Asynchronous.
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar* work) const {
    for (int k = 0; k < count_; ++k)
      block_.forward(space, theta + parameters_of(k), t,
                     k == 0 ? in : LayerInput<Scalar, Memory>(output_of<Scalar, Memory>(k - 1, work, t)),
                     k + 1 == count_ ? out : output_of<Scalar, Memory>(k, work, t),
                     work + std::size_t(k) * copy_size(t));
  }

  /// Each copy's backward, last first, each reporting that the gradient
  /// from its slice on is final. Asynchronous.
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
                LayerInput<Scalar, Memory> out, LayerInput<Scalar, Memory> dout, Scalar* g,
                LayerOutput<Scalar, Memory> din, Scalar* work) const {
    Scalar* gradients = work + std::size_t(count_) * copy_size(t);
    LayerInput<Scalar, Memory> gradient = dout;
    for (int k = count_ - 1; k >= 0; --k) {
      const LayerOutput<Scalar, Memory> d_input =
          k == 0 ? din
                 : LayerOutput<Scalar, Memory>(gradients + ((count_ - 1 - k) % 2) * panel_size(t),
                                               std::size_t(t.rows()), std::size_t(input_width()));
      block_.backward(space, theta + parameters_of(k), t,
                      k == 0 ? in : LayerInput<Scalar, Memory>(output_of<Scalar, Memory>(k - 1, work, t)),
                      k + 1 == count_ ? out : LayerInput<Scalar, Memory>(output_of<Scalar, Memory>(k, work, t)),
                      gradient, g + parameters_of(k), d_input, work + std::size_t(k) * copy_size(t));
      detail::report_final(g + parameters_of(k));
      gradient = d_input;
    }
  }

 private:
  std::size_t parameters_of(int k) const { return std::size_t(k) * std::size_t(block_.num_parameters()); }
  std::size_t panel_size(Tokens t) const { return std::size_t(t.rows()) * std::size_t(output_width()); }
  // A copy's own workspace, then its output.
  std::size_t copy_size(Tokens t) const { return block_.workspace_size(t) + panel_size(t); }
  template <class Scalar, class Memory>
  LayerOutput<Scalar, Memory> output_of(int k, Scalar* work, Tokens t) const {
    return LayerOutput<Scalar, Memory>(work + std::size_t(k) * copy_size(t) + block_.workspace_size(t),
                                       std::size_t(t.rows()), std::size_t(output_width()));
  }

  int count_ = 1;
  Block block_;
};

}  // namespace gradsum
