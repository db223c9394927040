// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How a step's aggregated sums become the gradient of the objective J.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>

#include <type_traits>

namespace gradsum {
namespace detail {

/// A Network's is_regularized as kernels see it: every parameter (its
/// layers, and their tuples, never go to a device).
struct EveryParameterRegularized {
  KOKKOS_FUNCTION bool is_regularized(int /*j*/) const { return true; }
};

/// What a kernel needs of `model` to call is_regularized(j): the model, or
/// for a Network EveryParameterRegularized.
template <class Model>
using regularization_t =
    std::conditional_t<is_network<Model>::value, EveryParameterRegularized, Model>;
template <class Model>
regularization_t<Model> regularization_of(const Model& model) {
  if constexpr (is_network<Model>::value) {
    (void)model;
    return {};
  } else {
    return model;
  }
}

/// g(j) = scale * sum(j) + l2 * theta(j) on regularised j; accumulates
/// ||g||^2 and ||W||^2.
template <class Model, class Scalar, class Sums, class Theta, class G>
struct ObjectiveGradient {
  using value_type = Scalar[];
  using size_type = int;
  int value_count;  // 2
  Model model;
  Sums sums;
  Theta theta;
  G g;
  Scalar scale;
  Scalar l2;

  KOKKOS_FUNCTION void operator()(int j, Scalar* acc) const {
    const Scalar w = model.is_regularized(j) ? theta(j) : Scalar(0);
    const Scalar gj = scale * sums(j) + l2 * w;
    g(j) = gj;
    acc[0] += gj * gj;
    acc[1] += w * w;
  }
  KOKKOS_FUNCTION void init(Scalar* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};

}  // namespace detail
}  // namespace gradsum
