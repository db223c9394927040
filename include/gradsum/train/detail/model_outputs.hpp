// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A model's outputs for every row of a features View, handed row by row
/// to a function that reduces them: what predict() and the metrics share.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>
#include <gradsum/gradient/detail/network.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {
namespace detail {

template <class Model, class Scalar, class X, class F, class Value>
struct OutputsOfRows {
  Model model;
  const Scalar* theta;
  X x;
  F f;

  KOKKOS_FUNCTION void operator()(std::int64_t r, Value& sum) const {
    Scalar z[output_capacity<Model>::value] = {};
    FeatureRoom<X> room;
    model.forward(theta, room.row(x, r), z);
    f(r, static_cast<const Scalar*>(z), sum);
  }
};

/// The compile-time conditions on features `X` read with parameters
/// `Theta` on `Space` (by `who`'s static_asserts, which name it).
template <class Space, class Theta, class X>
constexpr bool check_features_types() {
  static_assert(Kokkos::is_view<X>::value && int(X::rank) == 2,
                "gradsum::predict: features must be a rank-2 Kokkos View (n x d)");
  static_assert(std::is_same<typename X::non_const_value_type,
                             typename Theta::non_const_value_type>::value,
                "gradsum::predict: features must hold the parameters' scalar type");
  static_assert(std::is_same<typename X::array_layout, Kokkos::LayoutRight>::value ||
                    std::is_same<typename X::array_layout, Kokkos::LayoutLeft>::value ||
                    std::is_same<typename X::array_layout, Kokkos::LayoutStride>::value,
                "gradsum::predict: features must be LayoutRight, LayoutLeft or LayoutStride");
  static_assert(
      Kokkos::SpaceAccessibility<Space, typename X::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<Space, typename Theta::memory_space>::accessible,
      "gradsum::predict: the features' or parameters' memory space is not accessible from the "
      "execution space");
  return true;
}

/// Whether reduce_outputs() takes `model` layer by layer for features `x`:
/// a network of layers (Network) always, an MLP beyond the per-sample
/// limits, or rows it would gather that are wider than
/// max_gathered_features.
template <class Model, class X>
bool outputs_layerwise(const Model& model, const X& x) {
  if constexpr (is_network<Model>::value)
    return true;
  else if constexpr (has_dense_layers<Model>::value)
    return !per_sample_limits(model).empty() || !gather_limit("", x).empty();
  else
    return false;
}

/// Throws, naming `who`, unless `x` (n x d, any layout) and `theta` fit
/// `model`.
template <class Model, class Theta, class X>
void check_features(const char* who, const Model& model, const Theta& theta, const X& x) {
  if (std::int64_t(x.extent(1)) != model.num_features())
    fail(who, ": the features have ", x.extent(1), " columns but model ", model.name(),
         " expects ", model.num_features());
  if (!outputs_layerwise(model, x)) {
    const std::string limit = gather_limit(who, x);
    if (!limit.empty()) fail(limit);
  }
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    fail(who, ": theta has ", theta.extent(0), " entries but model ", model.name(), " has ",
         model.num_parameters(), " parameters");
}

/// The sum over the rows r of `x` of f(r, z, sum), z the k outputs of
/// `model` at `theta` for row r (a const Scalar* valid during the call):
/// per sample, layer by layer where outputs_layerwise(), or in panels
/// through a Network's body. Kernels labelled `label`. Blocking.
template <class Value, class Space, class Model, class Theta, class X, class F>
Value reduce_outputs(const Space& space, const Model& model, const Theta& theta, const X& x,
                     const F& f, const char* who, const char* label) {
  using Scalar = typename Theta::non_const_value_type;
  if constexpr (is_network<Model>::value) {
    return network_reduce_outputs<Value>(space, model, theta, x, f, who, label);
  } else {
    if constexpr (has_dense_layers<Model>::value)
      if (outputs_layerwise(model, x))
        return layerwise_reduce_outputs<Value>(space, model, theta, x, f, who, label);
    Value total{};
    Kokkos::parallel_reduce(
        label,
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                   std::int64_t(x.extent(0))),
        OutputsOfRows<Model, Scalar, X, F, Value>{model, theta.data(), x, f}, total);
    return total;
  }
}

}  // namespace detail
}  // namespace gradsum
