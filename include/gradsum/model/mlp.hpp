// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/multiply_add.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/activation.hpp>
#include <gradsum/model/detail/dense_layers.hpp>

#include <cstdint>
#include <string>
#include <vector>

#ifndef GRADSUM_MLP_MAX_LAYERS
/// Largest number of dense layers (hidden layers plus the output layer).
#define GRADSUM_MLP_MAX_LAYERS 16
#endif
#ifndef GRADSUM_MLP_MAX_WIDTH
/// The per-sample path's widest hidden or output layer (the input may be
/// wider); the layer-wise path has no such limit.
#define GRADSUM_MLP_MAX_WIDTH 256
#endif
#ifndef GRADSUM_MLP_MAX_UNITS
/// The per-sample path's largest total of hidden and output units: every
/// thread keeps the activations of one sample on its stack.
#define GRADSUM_MLP_MAX_UNITS 1024
#endif

namespace gradsum {
namespace detail {

/// A stand-in loss whose derivative is given: backward(theta, x, dz, g)
/// runs the fused pass with dl/dz = dz.
template <class Scalar>
struct GivenDerivative {
  const Scalar* dz;
  KOKKOS_FUNCTION Scalar value_and_derivative(const Scalar*, int k, Scalar, Scalar* out) const {
    for (int j = 0; j < k; ++j) out[j] = dz[j];
    return Scalar(0);
  }
};

}  // namespace detail

/// Multilayer perceptron: dense layers of run-time widths, an activation
/// per hidden layer and an identity output layer whose outputs are the
/// loss's inputs (regression values, a logit, or class logits):
///
///     a_0 = x,   a_{l+1} = f_l(W_l^T a_l + b_l),   z = W_{L-1}^T a_{L-1} + b_{L-1}.
///
/// The gradient is exact backpropagation (Rumelhart, Hinton & Williams,
/// Nature 323, 1986): delta_{L-1} = dl/dz, delta_{l-1} = (W_l delta_l) .
/// f'_{l-1}, dl/dW_l = a_l delta_l^T, dl/db_l = delta_l.
///
/// Parameters live in one contiguous vector, so aggregation stays one
/// message: layer l holds W_l (inputs x outputs, row-major) then b_l;
/// weights(theta, l) and bias(theta, l) are views of those blocks. Biases
/// are not regularised.
///
/// Two ways to the same gradient. The layer-wise path (the default,
/// `layerwise`): the whole batch through each layer in matrix products
/// (gemm, linalg/gemm.hpp), on every backend, for the Analytic gradient
/// with the Sum reduction. The per-sample path (the reference, and the one
/// Compensated and Reproducible sums take): forward and backward one
/// sample at a time.
///
/// Limits: GRADSUM_MLP_MAX_LAYERS layers. The per-sample path (per-thread
/// stack arrays) also limits layers to GRADSUM_MLP_MAX_WIDTH
/// units and the network to GRADSUM_MLP_MAX_UNITS units in all; a step
/// that would take them with a larger network says so when it is built
/// (per_sample_limits()). Define the macros before including
/// gradsum to change them.
class MLP {
 public:
  static constexpr int max_layers = GRADSUM_MLP_MAX_LAYERS;
  static constexpr int max_width = GRADSUM_MLP_MAX_WIDTH;
  static constexpr int max_units = GRADSUM_MLP_MAX_UNITS;
  /// Per-sample output arrays need room for the widest output layer.
  static constexpr int output_capacity = max_width;
  /// Values forward() keeps per thread for the hidden layers' outputs:
  /// two layers of max_width (GRADSUM_MLP_MAX_WIDTH).
  static constexpr int forward_room = 2 * max_width;

  /// `num_features` inputs, hidden layers of the given widths (possibly
  /// none: then it is a linear model), `num_outputs` outputs, and one
  /// activation for every hidden layer.
  MLP(int num_features, const std::vector<int>& hidden, int num_outputs,
      Activation activation = Activation::relu)
      : MLP(num_features, hidden, num_outputs,
            std::vector<Activation>(hidden.size(), activation)) {}

  /// As above with one activation per hidden layer.
  MLP(int num_features, const std::vector<int>& hidden, int num_outputs,
      const std::vector<Activation>& activations) {
    if (num_features < 1)
      fail("gradsum::MLP: num_features must be at least 1, got ", num_features);
    if (num_outputs < 1)
      fail("gradsum::MLP: num_outputs must be at least 1, got ", num_outputs);
    if (int(hidden.size()) + 1 > max_layers)
      fail("gradsum::MLP: ", hidden.size(), " hidden layers exceed the limit of ",
                   max_layers - 1, " (GRADSUM_MLP_MAX_LAYERS)");
    if (activations.size() != hidden.size())
      fail("gradsum::MLP: ", activations.size(), " activations given for ",
                   hidden.size(), " hidden layers; give one per hidden layer");
    layers_ = int(hidden.size()) + 1;
    width_[0] = num_features;
    for (std::size_t l = 0; l < hidden.size(); ++l) {
      if (!slope_from_value(activations[l]))
        fail("gradsum::MLP: hidden layer ", l + 1, " has activation ",
             activation_name(activations[l]),
             ", whose slope needs the pre-activation that the MLP does not keep; choose "
             "identity, relu, tanh or sigmoid (gelu is for Dense layers)");
      width_[l + 1] = hidden[l];
      activation_[l] = activations[l];
    }
    width_[layers_] = num_outputs;
    activation_[layers_ - 1] = Activation::identity;
    std::int64_t params = 0, units = 0;
    for (int l = 0; l < layers_; ++l) {
      const int out = width_[l + 1];
      if (out < 1)
        fail("gradsum::MLP: layer ", l + 1, " has width ", out,
                     "; widths must be at least 1");
      offset_[l] = params;
      unit_offset_[l] = units <= max_units ? int(units) : max_units;
      params += std::int64_t(width_[l]) * out + out;
      units += out;
      if (params > std::int64_t(2147483647)) break;
    }
    if (params > std::int64_t(2147483647))
      fail("gradsum::MLP: ", describe_widths(num_features, hidden, num_outputs),
                   " has more parameters than an int holds (2147483647)");
    units_ = units;
    for (int l = 1; l <= layers_; ++l) widest_ = width_[l] > widest_ ? width_[l] : widest_;
    for (int l = 1; l < layers_; ++l)
      widest_hidden_ = width_[l] > widest_hidden_ ? width_[l] : widest_hidden_;
    offset_[layers_] = params;
  }

  /// Short name used in messages.
  static const char* name() { return "mlp"; }

  /// Whether the gradient takes the layer-wise path where it can (the
  /// Analytic gradient with the Sum reduction); false: per sample.
  bool layerwise = true;

  /// Why the per-sample path cannot take this network, for messages, or ""
  /// when it can: every layer at most max_width units wide and max_units
  /// units in all.
  std::string per_sample_limits() const {
    if (widest_ <= max_width && units_ <= max_units) return {};
    return detail::concat("the per-sample path takes layers of at most ", max_width,
                          " units (GRADSUM_MLP_MAX_WIDTH) and ", max_units,
                          " units in all (GRADSUM_MLP_MAX_UNITS); ", describe(), " has ",
                          units_, " units");
  }

  /// The layers for the layer-wise path.
  detail::DenseLayers<max_layers> dense_layers() const {
    detail::DenseLayers<max_layers> d;
    d.count = layers_;
    for (int l = 0; l < layers_; ++l) {
      detail::DenseLayer& layer = d.layer[l];
      layer.inputs = width_[l];
      layer.outputs = width_[l + 1];
      layer.weights = offset_[l];
      layer.bias = bias_offset(l);
      layer.form = detail::DenseForm::weights_then_bias;
      layer.activation = activation_[l];
    }
    return d;
  }
  /// Input width d.
  KOKKOS_FUNCTION int num_features() const { return width_[0]; }
  /// Width of the output layer.
  KOKKOS_FUNCTION int num_outputs() const { return width_[layers_]; }
  /// Every weight and bias of every layer.
  KOKKOS_FUNCTION int num_parameters() const { return int(offset_[layers_]); }
  /// Number of dense layers, the output layer included.
  KOKKOS_FUNCTION int num_layers() const { return layers_; }
  /// Inputs of layer l (the previous layer's width).
  KOKKOS_FUNCTION int layer_inputs(int l) const { return width_[l]; }
  /// Outputs (units) of layer l.
  KOKKOS_FUNCTION int layer_outputs(int l) const { return width_[l + 1]; }
  /// Position of W_l in the parameter vector; b_l follows it.
  KOKKOS_FUNCTION int weight_offset(int l) const { return int(offset_[l]); }
  /// Position of b_l in the parameter vector.
  KOKKOS_FUNCTION int bias_offset(int l) const {
    return int(offset_[l]) + width_[l] * width_[l + 1];
  }
  /// Activation after layer l (identity for the output layer).
  KOKKOS_FUNCTION Activation activation(int l) const { return activation_[l]; }
  /// Weights take the L2 penalty, biases do not.
  KOKKOS_FUNCTION bool is_regularized(int j) const {
    for (int l = 0; l < layers_; ++l)
      if (j < offset_[l + 1]) return j < bias_offset(l);
    return false;
  }
  /// A hash of the layer widths and activations, so that workers whose
  /// networks differ but happen to have as many parameters disagree.
  std::int64_t architecture() const {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int l = 0; l <= layers_; ++l) mix(std::uint64_t(width_[l]));
    for (int l = 0; l < layers_; ++l) mix(std::uint64_t(activation_[l]));
    return std::int64_t(h >> 1);
  }
  /// "64-32(relu)-10" style description.
  std::string describe() const {
    // Appends only: GCC 12 at -O3 in C++20 warns falsely (-Wrestrict) on
    // `"-" + std::to_string(…)`.
    std::string s = std::to_string(width_[0]);
    for (int l = 0; l < layers_; ++l) {
      s += '-';
      s += std::to_string(width_[l + 1]);
      if (l + 1 < layers_) {
        s += '(';
        s += activation_name(activation_[l]);
        s += ')';
      }
    }
    return s;
  }

  /// The network that describe() describes ("13-32(tanh)-16(relu)-3":
  /// inputs, each hidden width with its activation, outputs). Throws
  /// gradsum::Error naming the text and what is wrong in it.
  static MLP from_description(const std::string& text) {
    auto bad = [&text](const char* what, std::size_t where) {
      fail("gradsum::MLP::from_description: '", text, "' at character ", where + 1, ": ",
                   what, " (expected widths joined by '-', each hidden one followed by its "
                   "activation in parentheses, e.g. 13-32(tanh)-3)");
    };
    std::vector<int> widths;
    std::vector<Activation> activations;
    for (std::size_t at = 0;; ++at) {  // one layer width per pass, then '-' or the end
      const std::size_t start = at;
      long long width = 0;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9' && width <= 1000000000)
        width = width * 10 + (text[at++] - '0');
      if (at == start) bad("a width is missing", at);
      if (width < 1 || width > 1000000000) bad("a width is out of range", start);
      const bool hidden = !widths.empty();  // unless it turns out to be the last
      widths.push_back(int(width));
      const bool has_activation = at < text.size() && text[at] == '(';
      if (has_activation) {
        const std::size_t close = text.find(')', at);
        if (close == std::string::npos) bad("an activation is not closed by ')'", at);
        if (!hidden) bad("the input width takes no activation", at);
        activations.push_back(parse_activation(text.substr(at + 1, close - at - 1)));
        at = close + 1;
      }
      if (at == text.size()) {
        if (widths.size() < 2) bad("a network needs an input and an output width", at);
        if (has_activation) bad("the output layer takes no activation", at);
        break;
      }
      if (text[at] != '-') bad("unexpected character", at);
      if (hidden && !has_activation) bad("a hidden layer has no activation", at);
    }
    return MLP(widths.front(), std::vector<int>(widths.begin() + 1, widths.end() - 1),
               widths.back(), activations);
  }

  /// W_l as an (inputs x outputs) row-major view into `theta`.
  template <class View>
  auto weights(const View& theta, int l) const {
    using Value = typename View::value_type;
    return Kokkos::View<Value**, Kokkos::LayoutRight, typename View::memory_space,
                        Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
        theta.data() + weight_offset(l), width_[l], width_[l + 1]);
  }
  /// b_l as a view into `theta`.
  template <class View>
  auto bias(const View& theta, int l) const {
    using Value = typename View::value_type;
    return Kokkos::View<Value*, typename View::memory_space,
                        Kokkos::MemoryTraits<Kokkos::Unmanaged>>(theta.data() + bias_offset(l),
                                                                 width_[l + 1]);
  }

  /// z = the network's outputs for one sample x: `x` holds num_features()
  /// contiguous values, `z` room for num_outputs() (written, never read:
  /// it need not be initialised). The hidden layers' outputs live in a
  /// stack array of forward_room values per thread, which is enough for
  /// every network the per-sample path takes (Kokkos::abort otherwise);
  /// forward_with() takes a workspace of the caller's instead.
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x, Scalar* z) const {
    Scalar work[forward_room];
    if (forward_workspace_size() > forward_room)
      Kokkos::abort("gradsum::MLP::forward: a hidden layer is wider than GRADSUM_MLP_MAX_WIDTH");
    forward_with(theta, x, z, work);
  }

  /// forward() in the caller's `work`, forward_workspace_size() values
  /// (two hidden layers' outputs; null for a network without hidden
  /// layers): per-thread storage sized to this network, for a kernel of
  /// one's own. No limit on the widths.
  template <class Scalar>
  KOKKOS_FORCEINLINE_FUNCTION void forward_with(const Scalar* theta, const Scalar* x, Scalar* z,
                                    Scalar* work) const {
    const Scalar* in = x;
    for (int l = 0; l < layers_; ++l) {
      Scalar* out = l + 1 == layers_ ? z : work + (l % 2) * widest_hidden_;
      dense_forward(theta, l, in, out);
      in = out;
    }
  }

  /// Values forward_with()'s workspace must hold: twice the widest hidden
  /// layer, 0 without hidden layers.
  KOKKOS_FUNCTION int forward_workspace_size() const { return 2 * widest_hidden_; }

  /// g += dz . dz/dtheta for one sample (recomputes the forward pass).
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    gradient_of(detail::GivenDerivative<Scalar>{dz}, theta, x, Scalar(0), g);
  }

  /// Fused per-sample gradient: one forward pass, the loss and its
  /// derivative, one backward pass; g += the sample's gradient. Returns
  /// the sample's loss.
  template <class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar sample_gradient(const Loss& loss, const Scalar* theta, const Scalar* x,
                                         Scalar y, Scalar* g) const {
    return gradient_of(loss, theta, x, y, g);
  }

 private:
  static std::string describe_widths(int d, const std::vector<int>& hidden, int k) {
    std::string s = std::to_string(d);
    for (int h : hidden) {
      s += '-';
      s += std::to_string(h);
    }
    s += '-';
    s += std::to_string(k);
    return s;
  }

  // Forward pass of one sample x keeping every layer's outputs: layer l's
  // at acts[unit_offset_[l]].
  template <class Scalar>
  KOKKOS_FUNCTION void forward_all(const Scalar* theta, const Scalar* x, Scalar* acts) const {
    // Steps refuse such networks on this path when they are built.
    if (units_ > max_units || widest_ > max_width)
      Kokkos::abort("gradsum::MLP: the network is beyond the per-sample path's limits");
    // The outputs are written below; cleared so that compilers need not
    // prove it (-Wmaybe-uninitialized).
    acts[unit_offset_[layers_ - 1]] = Scalar(0);
    for (int l = 0; l < layers_; ++l)
      dense_forward(theta, l, l == 0 ? x : acts + unit_offset_[l - 1], acts + unit_offset_[l]);
  }

  // out = f_l(W_l^T in + b_l). out[0] is written first, outside the loop,
  // so that compilers see a caller's z written (-Wmaybe-uninitialized).
  // Forced inline, as forward_with: GCC kept the call and lost 10%.
  template <class Scalar>
  KOKKOS_FORCEINLINE_FUNCTION void dense_forward(const Scalar* theta, int l, const Scalar* in,
                                     Scalar* out) const {
    const int n_in = width_[l], n_out = width_[l + 1];
    const Scalar* W = theta + offset_[l];
    const Scalar* b = W + n_in * n_out;
    out[0] = b[0];
    for (int j = 1; j < n_out; ++j) out[j] = b[j];
    // Input-major: row k of W is read in order.
    for (int k = 0; k < n_in; ++k) {
      const Scalar* Wk = W + k * n_out;
      const Scalar a = in[k];
      for (int j = 0; j < n_out; ++j) out[j] = detail::multiply_add<false>(a, Wk[j], out[j]);
    }
    if (activation_[l] != Activation::identity)
      for (int j = 0; j < n_out; ++j) out[j] = detail::activate(activation_[l], out[j]);
  }

  // Forward, loss, backward for one sample (x, y); g += its gradient.
  // Returns its loss.
  template <class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar gradient_of(const Loss& loss, const Scalar* theta, const Scalar* x,
                                     Scalar y, Scalar* g) const {
    Scalar acts[max_units];
    Scalar delta[2][max_width];
    forward_all(theta, x, acts);
    const Scalar* z = acts + unit_offset_[layers_ - 1];
    const Scalar value = detail::value_and_derivative(loss, z, num_outputs(), y, delta[0]);
    int cur = 0;
    for (int l = layers_ - 1; l >= 0; --l) {
      const int n_in = width_[l], n_out = width_[l + 1];
      const Scalar* W = theta + offset_[l];
      Scalar* G = g + offset_[l];
      Scalar* Gb = G + n_in * n_out;
      const Scalar* in = l == 0 ? x : acts + unit_offset_[l - 1];
      const Scalar* d = delta[cur];
      for (int j = 0; j < n_out; ++j) Gb[j] += d[j];
      for (int k = 0; k < n_in; ++k) {
        Scalar* Gk = G + k * n_out;
        const Scalar a = in[k];
        for (int j = 0; j < n_out; ++j) Gk[j] = detail::multiply_add<false>(a, d[j], Gk[j]);
      }
      if (l == 0) break;
      Scalar* prev = delta[cur ^ 1];
      const Activation f = activation_[l - 1];
      for (int k = 0; k < n_in; ++k) {
        const Scalar* Wk = W + k * n_out;
        Scalar sum = 0;
        for (int j = 0; j < n_out; ++j) sum = detail::multiply_add<false>(Wk[j], d[j], sum);
        prev[k] = sum * detail::activation_slope(f, in[k]);
      }
      cur ^= 1;
    }
    return value;
  }

  int layers_ = 0;
  std::int64_t units_ = 0;
  int widest_ = 0;         // the widest hidden or output layer
  int widest_hidden_ = 0;  // the widest hidden layer
  int width_[max_layers + 1] = {};
  Activation activation_[max_layers] = {};
  std::int64_t offset_[max_layers + 1] = {};
  int unit_offset_[max_layers] = {};
};

}  // namespace gradsum
