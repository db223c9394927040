// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a dense model describes its layers to the layer-wise gradient path
/// (gradient/detail/layerwise.hpp): the widths, where each layer's
/// parameters lie in theta and in which form, and its activation.

#include <gradsum/model/activation.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// How a dense layer's parameters lie in the parameter vector.
enum class DenseForm {
  /// W (inputs x outputs, row-major) at `weights`, then the biases (MLP).
  weights_then_bias,
  /// One row per output, its inputs' weights then its bias: an outputs x
  /// (inputs + 1) row-major block at `weights` (Softmax). First layer only.
  rows_with_bias
};

/// One dense layer: z = W^T a + b, then the activation.
struct DenseLayer {
  int inputs = 0;
  int outputs = 0;
  std::int64_t weights = 0;  ///< offset of the layer's block in theta
  std::int64_t bias = 0;     ///< offset of b (weights_then_bias)
  DenseForm form = DenseForm::weights_then_bias;
  Activation activation = Activation::identity;
};

/// A model's dense layers, first to last.
template <int Capacity>
struct DenseLayers {
  static constexpr int capacity = Capacity;
  int count = 0;
  DenseLayer layer[Capacity];

  /// The widest layer output.
  int widest_output() const {
    int w = 0;
    for (int l = 0; l < count; ++l) w = layer[l].outputs > w ? layer[l].outputs : w;
    return w;
  }
  /// The units of every layer, the output layer included.
  std::int64_t units() const {
    std::int64_t u = 0;
    for (int l = 0; l < count; ++l) u += layer[l].outputs;
    return u;
  }
};

}  // namespace detail
}  // namespace gradsum
