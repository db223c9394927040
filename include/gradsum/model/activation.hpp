// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The activation functions of dense layers (MLP's hidden layers), by
/// name, with their values and slopes.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <string>

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
  fail("gradsum::parse_activation: unknown activation '", name,
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
}  // namespace detail
}  // namespace gradsum
