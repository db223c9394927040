// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Dense: a fully connected layer, out = f(in W^T + b), PyTorch's
/// `nn.Linear` followed by an activation. Parameters in order: W
/// [outputs, inputs] row-major, then b [outputs] (none without bias: the
/// form of an output layer tied to a token embedding, whose weight it
/// shares). Backward, with delta = dout . f'(z):
///
///     dW += delta^T in,   db += 1^T delta,   din = delta W
///
/// Every product through gemm(); the bias and activation are one fused
/// pass each way. No atomics: every sum over rows, the bias's too, is a
/// product's.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/linalg/gemm.hpp>
#include <gradsum/model/activation.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/detail/elementwise.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {

/// A dense layer of `inputs` -> `outputs` with an activation and an
/// optional bias; a layer in the sense of model/layer.hpp.
///
/// Workspace per row: outputs scalars for delta (unless the activation is
/// identity, where delta is dout itself), under gelu 2 x outputs more for
/// the pre-activations z and the gate sigma(2u) (so that backward computes
/// no exp; the other slopes come from the values), and a one for the
/// bias's column sums.
class Dense {
 public:
  /// Throws gradsum::Error for a width below 1 or more parameters than an
  /// int holds.
  Dense(int inputs, int outputs, Activation activation = Activation::identity, bool bias = true)
      : inputs_(inputs), outputs_(outputs), activation_(activation), bias_(bias) {
    if (inputs < 1 || outputs < 1)
      fail("gradsum::Dense: inputs and outputs must be at least 1, got ", inputs, " and ", outputs);
    const std::int64_t params = std::int64_t(inputs) * outputs + (bias ? std::int64_t(outputs) : 0);
    if (params > std::int64_t(2147483647))
      fail("gradsum::Dense: ", inputs, " x ", outputs,
           " has more parameters than an int holds (2147483647)");
  }

  /// Widths, activation and whether there is a bias.
  int inputs() const { return inputs_; }
  int outputs() const { return outputs_; }
  Activation activation() const { return activation_; }
  bool has_bias() const { return bias_; }

  /// outputs x inputs weights, and outputs biases with a bias.
  int num_parameters() const { return inputs_ * outputs_ + (bias_ ? outputs_ : 0); }
  int input_width() const { return inputs_; }
  int output_width() const { return outputs_; }

  /// Scalars of workspace for the panel t (see the class comment).
  std::size_t workspace_size(Tokens t) const {
    const auto rows = std::size_t(t.rows()), n = std::size_t(outputs_);
    return rows * n * (keeps_delta() ? 1 : 0) + rows * n * (keeps_gelu() ? 2 : 0) +
           (bias_ ? rows : 0);
  }

  /// "dense(inputs,outputs,activation)", with ",nobias" without a bias.
  std::string describe() const {
    return "dense(" + std::to_string(inputs_) + "," + std::to_string(outputs_) + "," +
           activation_name(activation_) + (bias_ ? ")" : ",nobias)");
  }

  /// out = f(in W^T + b): one gemm, then one fused bias and activation
  /// pass (none for identity without bias; under gelu it keeps z and
  /// its gate). Asynchronous.
  template <class Space, class Scalar>
  void forward(const Space& space, const Scalar* theta, Tokens t,
               LayerInput<Scalar, typename Space::memory_space> in,
               LayerOutput<Scalar, typename Space::memory_space> out, Scalar* work) const {
    using CMatrix = LayerInput<Scalar, typename Space::memory_space>;
    detail::check_panel("gradsum::Dense::forward", "in", in, t.rows(), inputs_);
    detail::check_panel("gradsum::Dense::forward", "out", out, t.rows(), outputs_);
    gemm(space, 'N', 'T', Scalar(1), in, CMatrix(theta, outputs_, inputs_), Scalar(0), out);
    const Scalar* b = bias_ ? theta + weights() : nullptr;
    if (keeps_gelu())
      detail::bias_gelu_keep(space, "gradsum::layer::dense::bias_gelu", out, b, kept_z(t, work),
                             kept_gate(t, work));
    else if (activation_ != Activation::identity || bias_)
      detail::bias_activate(space, "gradsum::layer::dense::bias_activation", activation_, out, out,
                            b);
  }

  /// Adds dW and db into g, then reports them final
  /// (model/detail/backward_progress.hpp) and writes din = delta W, unless
  /// din.data() is null. Asynchronous.
  template <class Space, class Scalar>
  void backward(const Space& space, const Scalar* theta, Tokens t,
                LayerInput<Scalar, typename Space::memory_space> in,
                LayerInput<Scalar, typename Space::memory_space> out,
                LayerInput<Scalar, typename Space::memory_space> dout, Scalar* g,
                LayerOutput<Scalar, typename Space::memory_space> din, Scalar* work) const {
    using Memory = typename Space::memory_space;
    using CMatrix = LayerInput<Scalar, Memory>;
    using Matrix = LayerOutput<Scalar, Memory>;
    const char* who = "gradsum::Dense::backward";
    const std::int64_t rows = t.rows();
    detail::check_panel(who, "in", in, rows, inputs_);
    detail::check_panel(who, "dout", dout, rows, outputs_);
    if (din.data() != nullptr) detail::check_panel(who, "din", din, rows, inputs_);
    CMatrix delta = dout;
    if (keeps_delta()) {
      const Matrix scaled(work, rows, outputs_);
      if (keeps_gelu())
        detail::gelu_slope_times(space, "gradsum::layer::dense::slope", dout, kept_z(t, work),
                                 kept_gate(t, work), scaled);
      else
        detail::slope_times(space, "gradsum::layer::dense::slope", activation_, dout, out, false,
                            scaled);
      delta = scaled;
    }
    gemm(space, 'T', 'N', Scalar(1), delta, in, Scalar(1), Matrix(g, outputs_, inputs_));
    if (bias_) {
      Scalar* ones = work + workspace_size(t) - std::size_t(rows);
      detail::fill_ones(space, "gradsum::layer::dense::ones", ones, rows);
      gemm(space, 'N', 'N', Scalar(1), CMatrix(ones, 1, rows), delta, Scalar(1),
           Matrix(g + weights(), 1, outputs_));
    }
    if (din.data() == nullptr) return;
    // The layer's slice is final now, before the product for din: a
    // bucketed sum can start sending it while that product runs.
    detail::report_final(g);
    gemm(space, 'N', 'N', Scalar(1), delta, CMatrix(theta, outputs_, inputs_), Scalar(0), din);
  }

 private:
  int weights() const { return inputs_ * outputs_; }
  // delta = dout . f'(z) needs a buffer unless f is the identity.
  bool keeps_delta() const { return activation_ != Activation::identity; }
  bool keeps_gelu() const { return activation_ == Activation::gelu; }
  // Under gelu, z then its gate sigma(2u), after delta in the workspace.
  template <class Scalar>
  Scalar* kept_z(Tokens t, Scalar* work) const {
    return work + std::size_t(t.rows()) * std::size_t(outputs_);
  }
  template <class Scalar>
  Scalar* kept_gate(Tokens t, Scalar* work) const {
    return kept_z(t, work) + std::size_t(t.rows()) * std::size_t(outputs_);
  }

  int inputs_ = 0, outputs_ = 0;
  Activation activation_ = Activation::identity;
  bool bias_ = true;
};

}  // namespace gradsum
