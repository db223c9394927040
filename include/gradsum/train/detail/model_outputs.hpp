// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A model's outputs for every row of a features View, handed row by row
/// to a function that reduces them: what predict() and the metrics share.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>

#include <cstdint>
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
    model.forward(theta, &x(r, 0), z);
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
                    std::is_same<typename X::array_layout, Kokkos::LayoutStride>::value,
                "gradsum::predict: features must be LayoutRight or LayoutStride with "
                "contiguous rows: copy others with Dataset::copy_from");
  static_assert(
      Kokkos::SpaceAccessibility<Space, typename X::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<Space, typename Theta::memory_space>::accessible,
      "gradsum::predict: the features' or parameters' memory space is not accessible from the "
      "execution space");
  return true;
}

/// Throws, naming `who`, unless `x` (n x d, contiguous rows) and `theta`
/// fit `model`.
template <class Model, class Theta, class X>
void check_features(const char* who, const Model& model, const Theta& theta, const X& x) {
  if (std::int64_t(x.extent(1)) != model.num_features())
    fail(who, ": the features have ", x.extent(1), " columns but model ", model.name(),
         " expects ", model.num_features());
  if (x.extent(1) > 1 && x.stride(1) != 1)
    fail(who, ": the features have column stride ", x.stride(1),
         ", so a row is not contiguous; expected 1 (copy them with Dataset::copy_from)");
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    fail(who, ": theta has ", theta.extent(0), " entries but model ", model.name(), " has ",
         model.num_parameters(), " parameters");
}

/// The sum over the rows r of `x` of f(r, z, sum), z the k outputs of
/// `model` at `theta` for row r (a const Scalar* valid during the call):
/// per sample, or layer by layer for a network beyond the per-sample
/// limits. Kernels labelled `label`. Blocking.
template <class Value, class Space, class Model, class Theta, class X, class F>
Value reduce_outputs(const Space& space, const Model& model, const Theta& theta, const X& x,
                     const F& f, const char* who, const char* label) {
  using Scalar = typename Theta::non_const_value_type;
  if constexpr (has_dense_layers<Model>::value)
    if (!per_sample_limits(model).empty())
      return layerwise_reduce_outputs<Value>(space, model, theta, x, f, who, label);
  Value total{};
  Kokkos::parallel_reduce(
      label,
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                 std::int64_t(x.extent(0))),
      OutputsOfRows<Model, Scalar, X, F, Value>{model, theta.data(), x, f}, total);
  return total;
}

}  // namespace detail
}  // namespace gradsum
