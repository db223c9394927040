// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// Whether a loss offers value_and_derivative(z, k, y, dz), computing both
/// at once (BinaryCrossEntropy shares one exponential).
template <class L, class S, class = void>
struct has_value_and_derivative : std::false_type {};
template <class L, class S>
struct has_value_and_derivative<L, S, std::void_t<decltype(std::declval<const L&>().value_and_derivative(
                                          std::declval<const S*>(), 1, std::declval<S>(),
                                          std::declval<S*>()))>> : std::true_type {};

/// What every per-sample kernel body reads: the model and loss, the
/// parameters, the data, and which rows are selected.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct PerSample {
  Model model;
  Loss loss;
  const Scalar* theta;
  X x;
  Y y;
  Rows rows;
};

/// One sample's contribution: forward, loss and its derivative, backward;
/// a single pass over the sample's features (they stay in cache between
/// forward and backward).
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct AnalyticBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  int num_parameters;

  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const auto& model = this->model;
    const auto& loss = this->loss;
    const Scalar* theta = this->theta;
    const std::int64_t r = this->rows(i);
    const Scalar* xi = &this->x(r, 0);
    const Scalar yi = this->y(r);
    const int k = model.num_outputs();
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar dz[capacity] = {};
    model.forward(theta, xi, z);
    if constexpr (has_value_and_derivative<Loss, Scalar>::value) {
      acc[num_parameters] += loss.value_and_derivative(z, k, yi, dz);
    } else {
      acc[num_parameters] += loss.value(z, k, yi);
      loss.derivative(z, k, yi, dz);
    }
    model.backward(theta, xi, dz, acc);
  }
};

}  // namespace detail

/// The exact gradient from the model's backward pass (backpropagation).
///
/// For each selected sample: z = forward(theta, x), dz = dl/dz(z, y),
/// g += dz . dz/dtheta. Cost: one pass over the selected rows.
struct Analytic {
  /// Short name used in messages and command lines.
  static const char* name() { return "analytic"; }
  /// Analytic needs no workspace.
  static std::size_t workspace_size(int /*num_parameters*/) { return 0; }
  /// No run-time knobs to check.
  static void validate() {}

  /// Writes the summed gradient into out(0 … P) and the summed loss into
  /// out(P), over the selected rows. Asynchronous.
  template <class ExecutionSpace, class Model, class Loss, class Reduction,
            class Theta, class Data, class Rows, class Out, class Work>
  void sum(const ExecutionSpace& space, const Model& model, const Loss& loss,
           const Reduction& reduction, const Theta& theta, const Data& data,
           const Rows& rows, const Out& out, const Work& /*work*/) const {
    using Scalar = typename Data::scalar_type;
    using Body = detail::AnalyticBody<
        Model, Loss, Scalar, typename Data::features_view,
        typename Data::targets_view, Rows>;
    const int P = model.num_parameters();
    reduction.reduce(space, "gradsum::gradient::analytic", rows.size(), P + 1,
                     Body{{model, loss, theta.data(), data.features(), data.targets(), rows},
                          P},
                     out);
  }
};

}  // namespace gradsum
