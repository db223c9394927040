// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The layer-wise gradient of a dense model (MLP, Softmax) over panels of
/// rows of the batch, in matrix products:
///
///     forward    Z_l = A_{l-1} W_l,  A_l = f_l(Z_l + b_l)
///     loss       Delta_L = dl/dz per row; the loss sum into out(P)
///     backward   dW_l += A_{l-1}^T Delta_l,  db_l += 1^T Delta_l,
///                Delta_{l-1} = (Delta_l W_l^T) . f'_{l-1}
///
/// written straight into the step's gradient buffer (no per-sample
/// reduction). A layer in DenseForm::rows_with_bias (Softmax) takes its
/// input with a column of ones appended: Z = [A, 1] Theta^T and
/// dTheta += Delta^T [A, 1]. Every buffer lives in the workspace the step
/// allocated (layerwise_workspace_size): nothing is allocated here.

#include <gradsum/core/detail/entries.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/linalg/gemm.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/activation.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/detail/dense_layers.hpp>
#include <gradsum/model/layers/detail/elementwise.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// Scalars of workspace per panel row (input with its column of ones,
/// every layer's outputs, two deltas of the widest layer, a one), and
/// around the panels (the loss of a panel, and room to align).
template <class Layers>
std::size_t layerwise_row_scalars(const Layers& layers) {
  const std::size_t widest = std::size_t(layers.widest_output() > layers.layer[0].inputs
                                             ? layers.widest_output()
                                             : layers.layer[0].inputs);
  return std::size_t(layers.layer[0].inputs) + 1 + std::size_t(layers.units()) + 2 * widest + 1;
}
constexpr std::size_t layerwise_fixed_scalars = 64;

/// Rows per panel: a power of two from 256 to 2048, the panel's buffers
/// about 2^22 scalars.
template <class Layers>
std::int64_t layerwise_panel_rows(const Layers& layers) {
  const std::size_t per_row = layerwise_row_scalars(layers);
  std::int64_t rows = 2048;
  while (rows > 256 && std::size_t(rows) * per_row > (std::size_t(1) << 22)) rows /= 2;
  return rows;
}

/// The workspace a step allocates for the layer-wise path of `model`
/// (0 for a model without dense layers).
template <class Model>
std::size_t layerwise_workspace_size(const Model& model) {
  if constexpr (has_dense_layers<Model>::value) {
    const auto layers = model.dense_layers();
    return std::size_t(layerwise_panel_rows(layers)) * layerwise_row_scalars(layers) +
           layerwise_fixed_scalars;
  } else {
    (void)model;
    return 0;
  }
}

/// A row-major m x n matrix at p, as an unmanaged View.
template <class Scalar, class Memory>
using Panel = Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory,
                           Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The path's elementwise kernels, free functions of the space and views.

/// out(r, j) = x(rows(first + r), j) for j < d, and out(r, d) = 1 when
/// `ones` (rows_with_bias). On host spaces a row per index, its source row
/// found once, so that the copy vectorizes. Asynchronous.
template <class Space, class X, class Rows, class Out>
void gather_rows(const Space& space, const X& x, const Rows& rows, std::int64_t first,
                 const Out& out, bool ones) {
  using Scalar = typename Out::non_const_value_type;
  const char* label = "gradsum::gradient::layerwise::gather";
  const std::int64_t d = std::int64_t(x.extent(1)), n = std::int64_t(out.extent(1));
  const Scalar last = ones ? Scalar(1) : Scalar(0);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Space::memory_space>::accessible) {
    // Rows that are not contiguous (LayoutLeft) are read a value at a time.
    const bool contiguous = rows_contiguous(x);
    Kokkos::parallel_for(
        label,
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                   std::int64_t(out.extent(0))),
        KOKKOS_LAMBDA(std::int64_t r) {
          const std::int64_t i = rows(first + r);
          Scalar* to = &out(r, 0);
          if (contiguous) {
            const auto* from = &x(i, 0);
            for (std::int64_t j = 0; j < d; ++j) to[j] = from[j];
          } else {
            for (std::int64_t j = 0; j < d; ++j) to[j] = x(i, j);
          }
          if (n > d) to[d] = last;
        });
  } else {
    for_each_entry(space, label, std::int64_t(out.extent(0)), n,
                   KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
                     out(r, j) = j < d ? x(rows(first + r), j) : last;
                   });
  }
}

/// z(r, j) = f(z(r, j) + b(j)), or f(z(r, j)) where b is null: the dense
/// layers' fused pass (model/layers/detail/elementwise.hpp), in place; no
/// pass for the identity without a bias. Asynchronous.
template <class Space, class Z, class Scalar>
void add_bias_activate(const Space& space, const Z& z, const Scalar* b, Activation f) {
  if (f != Activation::identity || b != nullptr)
    bias_activate(space, "gradsum::gradient::layerwise::bias_activation", f, z, z, b);
}

/// delta(r, k) *= f'(a(r, k)), through the activation's value a (gelu,
/// whose slope needs the pre-activation, is refused: the MLP refuses it
/// first); no pass for the identity. Asynchronous.
template <class Space, class Delta, class A>
void scale_by_slope(const Space& space, const Delta& delta, const A& a, Activation f) {
  if (f != Activation::identity)
    slope_times(space, "gradsum::gradient::layerwise::slope", f, delta, a, false, delta);
}

/// The target of a panel's row r, the selected rows from `first` on:
/// y(rows(first + r)).
template <class Y, class Rows>
struct RowTargets {
  Y y;
  Rows rows;
  std::int64_t first;
  KOKKOS_FUNCTION typename Y::non_const_value_type operator()(std::int64_t r) const {
    return y(rows(first + r));
  }
};

/// Each row's loss derivative dz = dl/dz(z(r), target(r)) into delta, and
/// the sum of their losses into `total` (a scalar View), in a kernel named
/// `label`. On host spaces the loss's fused form where it has one (a loop
/// over the outputs that vectorizes). Asynchronous.
template <class Space, class Loss, class Z, class Targets, class Delta, class Total>
void loss_rows(const Space& space, const char* label, const Loss& loss, const Z& z,
               const Targets& target, const Delta& delta, const Total& total) {
  using Scalar = typename Delta::non_const_value_type;
  constexpr bool fused =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  const int k = int(z.extent(1));
  Kokkos::parallel_reduce(
      label,
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                 std::int64_t(z.extent(0))),
      KOKKOS_LAMBDA(std::int64_t r, Scalar & sum) {
        sum += value_and_derivative<fused>(loss, &z(r, 0), k, target(r), &delta(r, 0));
      },
      total);
}

/// into(0) += from(0) on the device. Asynchronous.
template <class Space, class Into, class From>
void add_scalar(const Space& space, const Into& into, const From& from) {
  Kokkos::parallel_for(
      "gradsum::gradient::layerwise::add_loss", Kokkos::RangePolicy<Space>(space, 0, 1),
      KOKKOS_LAMBDA(int) { into(0) += from(); });
}

/// The panels of the layer-wise path in a workspace: for R rows, the input
/// (with room for the column of ones), every layer's outputs, two deltas
/// of the widest layer, a row of ones; and the loss of a panel. Points
/// into `work`, which must hold layerwise_row_scalars(layers) scalars per
/// row and layerwise_fixed_scalars more.
template <class Scalar, class Memory, class Layers>
struct LayerwisePanels {
  using Matrix = Panel<Scalar, Memory>;
  using CMatrix = Panel<const Scalar, Memory>;
  Layers layers;
  std::int64_t rows = 0;  // R
  Scalar* input = nullptr;
  Scalar* outputs[Layers::capacity] = {};
  Scalar* deltas[2] = {};
  Scalar* ones = nullptr;
  Kokkos::View<Scalar, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>> panel_loss;

  template <class Space, class Work>
  LayerwisePanels(const Space& space, const Layers& l, const Work& work, const char* who)
      : layers(l) {
    const std::size_t per_row = layerwise_row_scalars(layers);
    if (work.extent(0) < per_row + layerwise_fixed_scalars)
      fail(who, ": the layer-wise path needs a workspace of ", per_row + layerwise_fixed_scalars,
           " values or more, got ", work.extent(0));
    rows = std::int64_t((work.extent(0) - layerwise_fixed_scalars) / per_row);
    if (rows > layerwise_panel_rows(layers)) rows = layerwise_panel_rows(layers);
    Scalar* at = work.data();
    panel_loss = decltype(panel_loss)(at);
    at += layerwise_fixed_scalars;
    auto take = [&at](std::int64_t n) {
      Scalar* p = at;
      at += n;
      return p;
    };
    const int d = layers.layer[0].inputs;
    const int widest = layers.widest_output() > d ? layers.widest_output() : d;
    input = take(rows * (d + 1));
    for (int k = 0; k < layers.count; ++k) outputs[k] = take(rows * layers.layer[k].outputs);
    deltas[0] = take(rows * widest);
    deltas[1] = take(rows * widest);
    ones = take(rows);
    Kokkos::deep_copy(space, Kokkos::View<Scalar*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                 ones, rows),
                      Scalar(1));
  }

  /// The first layer's input for the m selected rows from `first` on: the
  /// rows themselves where they lie in order, else gathered (with the
  /// column of ones for rows_with_bias). Asynchronous.
  template <class Space, class X, class Rows>
  CMatrix input_panel(const Space& space, const X& x, const Rows& rows_of, std::int64_t first,
                      std::int64_t m) const {
    const int d = layers.layer[0].inputs;
    const bool augmented = layers.layer[0].form == DenseForm::rows_with_bias;
    if (std::is_same<Rows, RowRange>::value && !augmented && rows_contiguous(x) &&
        std::size_t(x.stride(0)) == std::size_t(d))
      return CMatrix(x.data() + rows_of(first) * d, m, d);
    const Matrix gathered(input, m, augmented ? d + 1 : d);
    gather_rows(space, x, rows_of, first, gathered, augmented);
    return gathered;
  }

  /// Layer l's input: the first layer's `a0`, else layer l - 1's outputs.
  CMatrix layer_input(int l, const CMatrix& a0, std::int64_t m) const {
    if constexpr (Layers::capacity == 1) return a0;  // (no false array-bounds warning)
    else return l == 0 ? a0 : CMatrix(outputs[l - 1], m, layers.layer[l].inputs);
  }

  /// Every layer's outputs for the input panel a0 (m rows) at the
  /// parameters w; the last layer's are the model's outputs. Asynchronous.
  template <class Space>
  void forward(const Space& space, const Scalar* w, const CMatrix& a0, std::int64_t m) const {
    for (int l = 0; l < layers.count; ++l) {
      const DenseLayer& layer = layers.layer[l];
      const Matrix z(outputs[l], m, layer.outputs);
      if (layer.form == DenseForm::rows_with_bias) {
        gemm(space, 'N', 'T', Scalar(1), layer_input(l, a0, m),
             CMatrix(w + layer.weights, layer.outputs, layer.inputs + 1), Scalar(0), z);
        add_bias_activate(space, z, static_cast<const Scalar*>(nullptr), layer.activation);
      } else {
        gemm(space, 'N', 'N', Scalar(1), layer_input(l, a0, m),
             CMatrix(w + layer.weights, layer.inputs, layer.outputs), Scalar(0), z);
        add_bias_activate(space, z, w + layer.bias, layer.activation);
      }
    }
  }

  /// The model's outputs after forward(): m x k.
  CMatrix model_outputs(std::int64_t m) const {
    return CMatrix(outputs[layers.count - 1], m, layers.layer[layers.count - 1].outputs);
  }

  // The first and one past the last parameter of a layer's block.
  static std::int64_t block_begin(const DenseLayer& layer) {
    return layer.form == DenseForm::rows_with_bias ? layer.weights
                                                   : std::min(layer.weights, layer.bias);
  }
  static std::int64_t block_end(const DenseLayer& layer) {
    const std::int64_t weights = std::int64_t(layer.inputs) * layer.outputs;
    return layer.form == DenseForm::rows_with_bias
               ? layer.weights + weights + layer.outputs
               : std::max(layer.weights + weights, layer.bias + layer.outputs);
  }

  /// The gradient into g (added), from the loss derivative in deltas[0],
  /// after forward() of the same panel; reports each layer's block final
  /// as it goes (model/detail/backward_progress.hpp). Asynchronous.
  template <class Space>
  void backward(const Space& space, const Scalar* w, Scalar* g, const CMatrix& a0,
                std::int64_t m) const {
    int cur = 0;
    for (int l = layers.count - 1; l >= 0; --l) {
      const DenseLayer& layer = layers.layer[l];
      const CMatrix delta(deltas[cur], m, layer.outputs);
      const CMatrix a = layer_input(l, a0, m);
      if (layer.form == DenseForm::rows_with_bias) {
        gemm(space, 'T', 'N', Scalar(1), delta, a, Scalar(1),
             Matrix(g + layer.weights, layer.outputs, layer.inputs + 1));
      } else {
        gemm(space, 'T', 'N', Scalar(1), a, delta, Scalar(1),
             Matrix(g + layer.weights, layer.inputs, layer.outputs));
        gemm(space, 'N', 'N', Scalar(1), CMatrix(ones, 1, m), delta, Scalar(1),
             Matrix(g + layer.bias, 1, layer.outputs));
      }
      // Layers laid out first to last: every entry from this one's on is
      // final (model/detail/backward_progress.hpp).
      if (l == 0) {
        report_final(g + block_begin(layer));
        break;
      }
      if constexpr (Layers::capacity > 1) {
        if (block_end(layers.layer[l - 1]) <= block_begin(layer))
          report_final(g + block_begin(layer));
        const Matrix previous(deltas[cur ^ 1], m, layer.inputs);
        gemm(space, 'N', 'T', Scalar(1), delta,
             CMatrix(w + layer.weights, layer.inputs, layer.outputs), Scalar(0), previous);
        scale_by_slope(space, previous, a, layers.layer[l - 1].activation);
        cur ^= 1;
      }
    }
  }
};

/// The layer-wise gradient of `model` (which has dense layers) over the
/// selected rows: the summed gradient into out(0 … P), the summed loss
/// into out(P), in panels of rows sized by `work` (layerwise_workspace_size
/// scalars or more). Asynchronous.
template <class Space, class Model, class Loss, class Theta, class Data, class Rows,
          class Out, class Work>
void layerwise_sum(const Space& space, const Model& model, const Loss& loss, const Theta& theta,
                   const Data& data, const Rows& rows, const Out& out, const Work& work) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename Space::memory_space;
  using Layers = std::decay_t<decltype(model.dense_layers())>;
  const LayerwisePanels<Scalar, Memory, Layers> panels(space, model.dense_layers(), work,
                                                       "gradsum::Analytic");
  const int P = model.num_parameters();
  const int k = model.num_outputs();
  Kokkos::deep_copy(space, Kokkos::subview(out, Kokkos::make_pair(0, P + 1)), Scalar(0));
  const auto total = Kokkos::subview(out, Kokkos::make_pair(P, P + 1));
  for (std::int64_t first = 0; first < rows.size(); first += panels.rows) {
    const std::int64_t m =
        rows.size() - first < panels.rows ? rows.size() - first : panels.rows;
    const auto a0 = panels.input_panel(space, data.features(), rows, first, m);
    panels.forward(space, theta.data(), a0, m);
    using Targets = RowTargets<typename Data::targets_view, Rows>;
    loss_rows(space, "gradsum::gradient::layerwise::loss", loss, panels.model_outputs(m),
              Targets{data.targets(), rows, first}, Panel<Scalar, Memory>(panels.deltas[0], m, k),
              panels.panel_loss);
    add_scalar(space, total, panels.panel_loss);
    if (first + m < rows.size()) {  // a later panel still adds: nothing is final yet
      const ScopedBackwardListener quiet(nullptr);
      panels.backward(space, theta.data(), out.data(), a0, m);
    } else {
      panels.backward(space, theta.data(), out.data(), a0, m);
    }
  }
}

/// The sum over the rows r of the n x d features `x` of f(r, z, sum), z
/// the model's k outputs for row r (const Scalar*), computed layer by
/// layer in panels (allocates their workspace): predictions and metrics
/// of a network beyond the per-sample limits. `who` names the caller in
/// errors. Blocking.
/// The sum over the m rows of a panel of outputs `z` (row r of the panel
/// is row first + r of the data) of f(first + r, z_r, sum). Blocking. (A
/// function of its own: CUDA's device lambdas may not sit in a function
/// templated on a host lambda's type.)
template <class Value, class Space, class Z, class F>
Value reduce_panel(const Space& space, std::int64_t first, std::int64_t m, const Z& z, const F& f,
                   const char* label) {
  Value here{};
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, m),
      KOKKOS_LAMBDA(std::int64_t r, Value & sum) { f(first + r, &z(r, 0), sum); }, here);
  return here;
}

template <class Value, class Space, class Model, class Theta, class X, class F>
Value layerwise_reduce_outputs(const Space& space, const Model& model, const Theta& theta,
                               const X& x, const F& f, const char* who, const char* label) {
  using Scalar = typename Theta::non_const_value_type;
  using Memory = typename Space::memory_space;
  using Layers = std::decay_t<decltype(model.dense_layers())>;
  const auto layers = model.dense_layers();
  Kokkos::View<Scalar*, Memory> work(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::metrics::layerwise_panels"),
      std::size_t(layerwise_panel_rows(layers)) * layerwise_row_scalars(layers) +
          layerwise_fixed_scalars);
  const LayerwisePanels<Scalar, Memory, Layers> panels(space, layers, work, who);
  const RowRange rows{0, std::int64_t(x.extent(0))};
  Value total{};
  for (std::int64_t first = 0; first < rows.size(); first += panels.rows) {
    const std::int64_t m = std::min(rows.size() - first, panels.rows);
    panels.forward(space, theta.data(), panels.input_panel(space, x, rows, first, m), m);
    total += reduce_panel<Value>(space, first, m, panels.model_outputs(m), f, label);
  }
  return total;
}

}  // namespace detail
}  // namespace gradsum
