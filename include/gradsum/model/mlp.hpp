// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>

#include <cstdint>
#include <string>
#include <vector>

#ifndef GRADSUM_MLP_MAX_LAYERS
/// Largest number of dense layers (hidden layers plus the output layer).
#define GRADSUM_MLP_MAX_LAYERS 16
#endif
#ifndef GRADSUM_MLP_MAX_WIDTH
/// Largest width of a hidden or output layer (the input may be wider).
#define GRADSUM_MLP_MAX_WIDTH 256
#endif
#ifndef GRADSUM_MLP_MAX_UNITS
/// Largest total number of hidden and output units: every thread keeps
/// the activations of one sample (GRADSUM_MLP_BLOCK samples on the batched
/// path) on its stack.
#define GRADSUM_MLP_MAX_UNITS 1024
#endif
#ifndef GRADSUM_MLP_BLOCK
/// Samples per block on the batched path.
#define GRADSUM_MLP_BLOCK 8
#endif

namespace gradsum {

/// Activation function of a hidden layer.
enum class Activation { identity, relu, tanh, sigmoid };

/// "identity", "relu", "tanh" or "sigmoid".
inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::tanh: return "tanh";
    case Activation::sigmoid: return "sigmoid";
    case Activation::identity: break;
  }
  return "identity";
}

/// The activation called `name`; throws gradsum::Error naming the choices.
inline Activation parse_activation(const std::string& name) {
  for (Activation a : {Activation::identity, Activation::relu, Activation::tanh,
                       Activation::sigmoid})
    if (name == activation_name(a)) return a;
  detail::fail("gradsum::parse_activation: unknown activation '", name,
               "'; choose identity, relu, tanh or sigmoid");
}

namespace detail {

/// f(z).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar activate(Activation a, Scalar z) {
  switch (a) {
    case Activation::relu: return z > Scalar(0) ? z : Scalar(0);
    case Activation::tanh: return math::tanh(z);
    // e^{-z} overflows to +inf for very negative z, giving exactly 0.
    case Activation::sigmoid: return Scalar(1) / (Scalar(1) + math::exp(-z));
    case Activation::identity: break;
  }
  return z;
}

/// f'(z) written through the activation's value f(z), which is all the
/// backward pass keeps (relu: f(z) > 0 exactly when z > 0).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar activation_slope(Activation a, Scalar fz) {
  switch (a) {
    case Activation::relu: return fz > Scalar(0) ? Scalar(1) : Scalar(0);
    case Activation::tanh: return Scalar(1) - fz * fz;
    case Activation::sigmoid: return fz * (Scalar(1) - fz);
    case Activation::identity: break;
  }
  return Scalar(1);
}

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
/// Two ways to the same gradient: per sample (the reference and the
/// default), and batched, blocks of GRADSUM_MLP_BLOCK samples pushed through
/// each layer together so that a layer's weights are reused from cache
/// across the block. The Analytic gradient takes the batched path on host
/// spaces when `batched` is true and the reduction does not need each
/// sample's contribution on its own (Reproducible does). It is opt-in: a
/// layer's weights already stay in cache between samples, so it gains
/// little (docs/performance.md).
///
/// Limits (compile-time, per-thread stack): GRADSUM_MLP_MAX_LAYERS layers,
/// GRADSUM_MLP_MAX_WIDTH units per layer and GRADSUM_MLP_MAX_UNITS units in
/// all; define the macros before including gradsum to change them.
class MLP {
 public:
  static constexpr int max_layers = GRADSUM_MLP_MAX_LAYERS;
  static constexpr int max_width = GRADSUM_MLP_MAX_WIDTH;
  static constexpr int max_units = GRADSUM_MLP_MAX_UNITS;
  static constexpr int block_size = GRADSUM_MLP_BLOCK;
  /// Per-sample output arrays need room for the widest output layer.
  static constexpr int output_capacity = max_width;

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
      detail::fail("gradsum::MLP: num_features must be at least 1, got ", num_features);
    if (num_outputs < 1)
      detail::fail("gradsum::MLP: num_outputs must be at least 1, got ", num_outputs);
    if (int(hidden.size()) + 1 > max_layers)
      detail::fail("gradsum::MLP: ", hidden.size(), " hidden layers exceed the limit of ",
                   max_layers - 1, " (GRADSUM_MLP_MAX_LAYERS)");
    if (activations.size() != hidden.size())
      detail::fail("gradsum::MLP: ", activations.size(), " activations given for ",
                   hidden.size(), " hidden layers; give one per hidden layer");
    layers_ = int(hidden.size()) + 1;
    width_[0] = num_features;
    for (std::size_t l = 0; l < hidden.size(); ++l) {
      width_[l + 1] = hidden[l];
      activation_[l] = activations[l];
    }
    width_[layers_] = num_outputs;
    activation_[layers_ - 1] = Activation::identity;
    std::int64_t params = 0, units = 0;
    for (int l = 0; l < layers_; ++l) {
      const int out = width_[l + 1];
      if (out < 1 || out > max_width)
        detail::fail("gradsum::MLP: layer ", l + 1, " has width ", out,
                     "; widths must be in [1, ", max_width, "] (GRADSUM_MLP_MAX_WIDTH)");
      offset_[l] = params;
      unit_offset_[l] = int(units);
      params += std::int64_t(width_[l]) * out + out;
      units += out;
    }
    if (units > max_units)
      detail::fail("gradsum::MLP: ", units, " hidden and output units exceed the limit of ",
                   max_units, " (GRADSUM_MLP_MAX_UNITS)");
    if (params > std::int64_t(2147483647))
      detail::fail("gradsum::MLP: ", params, " parameters do not fit an int");
    offset_[layers_] = params;
  }

  /// Short name used in messages.
  static const char* name() { return "mlp"; }
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
      detail::fail("gradsum::MLP::from_description: '", text, "' at character ", where + 1, ": ",
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

  /// Whether the Analytic gradient may take the batched path (see above).
  bool batched = false;

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

  /// z = the network's outputs for one sample x.
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x, Scalar* z) const {
    Scalar acts[max_units];
    const Scalar* xs[1] = {x};
    forward_block<1>(theta, xs, 1, acts);
    const Scalar* out = acts + unit_offset_[layers_ - 1];
    for (int j = 0; j < num_outputs(); ++j) z[j] = out[j];
  }

  /// g += dz . dz/dtheta for one sample (recomputes the forward pass).
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    const Scalar* xs[1] = {x};
    const Scalar y = 0;
    gradient_block<1>(detail::GivenDerivative<Scalar>{dz}, theta, xs, &y, 1, g);
  }

  /// Fused per-sample gradient: one forward pass, the loss and its
  /// derivative, one backward pass; g += the sample's gradient. Returns
  /// the sample's loss.
  template <class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar sample_gradient(const Loss& loss, const Scalar* theta, const Scalar* x,
                                         Scalar y, Scalar* g) const {
    const Scalar* xs[1] = {x};
    return gradient_block<1>(loss, theta, xs, &y, 1, g);
  }

  /// Batched gradient over m <= block_size samples xs[s] with targets
  /// ys[s]: g += the sum of their gradients; returns the sum of their
  /// losses. Sample by sample, the arithmetic is that of sample_gradient.
  template <class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar block_gradient(const Loss& loss, const Scalar* theta,
                                        const Scalar* const* xs, const Scalar* ys, int m,
                                        Scalar* g) const {
    return gradient_block<block_size>(loss, theta, xs, ys, m, g);
  }

 private:
  // Forward pass of m <= B samples keeping every layer's outputs: layer l's
  // outputs for sample s at acts[B unit_offset_[l] + s width_[l + 1]].
  template <int B, class Scalar>
  KOKKOS_FUNCTION void forward_block(const Scalar* theta, const Scalar* const* xs, int m,
                                     Scalar* acts) const {
    // The outputs are written below; cleared so that compilers need not
    // prove it (-Wmaybe-uninitialized).
    Scalar* z = acts + B * unit_offset_[layers_ - 1];
    z[0] = Scalar(0);
    for (int l = 0; l < layers_; ++l) {
      const int n_in = width_[l], n_out = width_[l + 1];
      const Scalar* W = theta + offset_[l];
      const Scalar* b = W + n_in * n_out;
      Scalar* out = acts + B * unit_offset_[l];
      const Scalar* in = l == 0 ? nullptr : acts + B * unit_offset_[l - 1];
      for (int s = 0; s < m; ++s)
        for (int j = 0; j < n_out; ++j) out[s * n_out + j] = b[j];
      // Input-major: row k of W serves the whole block while in cache.
      for (int k = 0; k < n_in; ++k) {
        const Scalar* Wk = W + k * n_out;
        for (int s = 0; s < m; ++s) {
          const Scalar a = l == 0 ? xs[s][k] : in[s * n_in + k];
          Scalar* o = out + s * n_out;
          for (int j = 0; j < n_out; ++j) o[j] += a * Wk[j];
        }
      }
      if (activation_[l] != Activation::identity)
        for (int t = 0; t < m * n_out; ++t) out[t] = detail::activate(activation_[l], out[t]);
    }
  }

  // Forward, loss, backward for m <= B samples; g += their gradients.
  template <int B, class Loss, class Scalar>
  KOKKOS_FUNCTION Scalar gradient_block(const Loss& loss, const Scalar* theta,
                                        const Scalar* const* xs, const Scalar* ys, int m,
                                        Scalar* g) const {
    Scalar acts[B * max_units];
    Scalar delta[2][B * max_width];
    forward_block<B>(theta, xs, m, acts);
    Scalar total = 0;
    const int k_out = num_outputs();
    const Scalar* z = acts + B * unit_offset_[layers_ - 1];
    for (int s = 0; s < m; ++s)
      total += detail::value_and_derivative(loss, z + s * k_out, k_out, ys[s],
                                            delta[0] + s * k_out);
    int cur = 0;
    for (int l = layers_ - 1; l >= 0; --l) {
      const int n_in = width_[l], n_out = width_[l + 1];
      const Scalar* W = theta + offset_[l];
      Scalar* G = g + offset_[l];
      Scalar* Gb = G + n_in * n_out;
      const Scalar* in = l == 0 ? nullptr : acts + B * unit_offset_[l - 1];
      const Scalar* d = delta[cur];
      for (int s = 0; s < m; ++s)
        for (int j = 0; j < n_out; ++j) Gb[j] += d[s * n_out + j];
      for (int k = 0; k < n_in; ++k) {
        Scalar* Gk = G + k * n_out;
        for (int s = 0; s < m; ++s) {
          const Scalar a = l == 0 ? xs[s][k] : in[s * n_in + k];
          const Scalar* ds = d + s * n_out;
          for (int j = 0; j < n_out; ++j) Gk[j] += a * ds[j];
        }
      }
      if (l == 0) break;
      Scalar* prev = delta[cur ^ 1];
      const Activation f = activation_[l - 1];
      for (int k = 0; k < n_in; ++k) {
        const Scalar* Wk = W + k * n_out;
        for (int s = 0; s < m; ++s) {
          const Scalar* ds = d + s * n_out;
          Scalar sum = 0;
          for (int j = 0; j < n_out; ++j) sum += Wk[j] * ds[j];
          prev[s * n_in + k] = sum * detail::activation_slope(f, in[s * n_in + k]);
        }
      }
      cur ^= 1;
    }
    return total;
  }

  int layers_ = 0;
  int width_[max_layers + 1] = {};
  Activation activation_[max_layers] = {};
  std::int64_t offset_[max_layers + 1] = {};
  int unit_offset_[max_layers] = {};
};

}  // namespace gradsum
