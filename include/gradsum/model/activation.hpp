// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The activation functions of dense layers (MLP's hidden layers, Dense,
/// ActivationLayer), by name, with their values and slopes. GELU is the
/// tanh form of Hendrycks and Gimpel (2016), PyTorch's
/// `gelu(approximate="tanh")`:
///
///     gelu(z) = z/2 (1 + tanh(u)),  u = sqrt(2/pi) (z + 0.044715 z^3)
///
/// computed as z sigma(2u) (the same function: (1 + tanh u)/2 = sigma(2u))
/// through vector_math::exp, which the host compiler vectorizes where
/// libm's tanh would stop the loop.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/loss/detail/vector_math.hpp>

#include <string>

namespace gradsum {

/// Activation function of a hidden layer. gelu's slope needs the
/// pre-activation z, not only the value f(z) (see activation_slope_at).
enum class Activation { identity, relu, tanh, sigmoid, gelu };

/// "identity", "relu", "tanh", "sigmoid" or "gelu".
inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::tanh: return "tanh";
    case Activation::sigmoid: return "sigmoid";
    case Activation::gelu: return "gelu";
    case Activation::identity: break;
  }
  return "identity";
}

/// The activation called `name`; throws gradsum::Error naming the choices.
inline Activation parse_activation(const std::string& name) {
  for (Activation a : {Activation::identity, Activation::relu, Activation::tanh,
                       Activation::sigmoid, Activation::gelu})
    if (name == activation_name(a)) return a;
  fail("gradsum::parse_activation: unknown activation '", name,
               "'; choose identity, relu, tanh, sigmoid or gelu");
}

/// Whether the slope of `a` can be had from its value f(z) alone, which is
/// all that the MLP's backward keeps (false for gelu).
inline bool slope_from_value(Activation a) { return a != Activation::gelu; }

namespace detail {

/// gelu's gate s = sigma(2u) = (1 + tanh u)/2, u = sqrt(2/pi) (z + 0.044715
/// z^3), so gelu(z) = z s. exp overflows to +inf for very negative z,
/// giving exactly 0.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar gelu_gate(Scalar z) {
  const Scalar two_sqrt_2_over_pi = Scalar(2 * 0.7978845608028654);
  return Scalar(1) /
         (Scalar(1) + vector_math::exp(-two_sqrt_2_over_pi * (z + Scalar(0.044715) * z * z * z)));
}

/// f(z).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar activate(Activation a, Scalar z) {
  switch (a) {
    case Activation::relu: return z > Scalar(0) ? z : Scalar(0);
    case Activation::tanh: return math::tanh(z);
    // e^{-z} overflows to +inf for very negative z, giving exactly 0.
    case Activation::sigmoid: return Scalar(1) / (Scalar(1) + math::exp(-z));
    case Activation::gelu: return z * gelu_gate(z);
    case Activation::identity: break;
  }
  return z;
}

/// f'(z) written through the activation's value f(z), which is all the
/// MLP's backward pass keeps (relu: f(z) > 0 exactly when z > 0). Not
/// defined for gelu (slope_from_value is false): the MLP refuses it.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar activation_slope(Activation a, Scalar fz) {
  switch (a) {
    case Activation::relu: return fz > Scalar(0) ? Scalar(1) : Scalar(0);
    case Activation::tanh: return Scalar(1) - fz * fz;
    case Activation::sigmoid: return fz * (Scalar(1) - fz);
    case Activation::gelu:
      Kokkos::abort("gradsum: activation_slope: gelu's slope needs its pre-activation");
      break;
    case Activation::identity: break;
  }
  return Scalar(1);
}

/// gelu'(z) from z and its gate s = gelu_gate(z), so that a backward that
/// kept s computes no exp: the product rule on z sigma(2u), with
/// sigma' = s (1 - s) and du/dz = sqrt(2/pi) (1 + 3 0.044715 z^2).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar gelu_slope(Scalar z, Scalar s) {
  const Scalar two_sqrt_2_over_pi = Scalar(2 * 0.7978845608028654);
  return s + z * s * (Scalar(1) - s) * two_sqrt_2_over_pi *
                 (Scalar(1) + Scalar(3 * 0.044715) * z * z);
}

/// f'(z) from the pre-activation z (any activation; relu'(0) = 0).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar activation_slope_at(Activation a, Scalar z) {
  if (a == Activation::gelu) return gelu_slope(z, gelu_gate(z));
  return activation_slope(a, activate(a, z));
}
}  // namespace detail
}  // namespace gradsum
