// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The elementwise passes of Dense and ActivationLayer: the fused bias
/// and activation forward, the activation's slope backward, a row of
/// ones, and the check of a panel's shape.

#include <gradsum/core/detail/entries.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/activation.hpp>

#include <cstdint>

namespace gradsum {
namespace detail {

/// Throws unless the panel `v` (called `what` by `who`) is rows x width.
template <class View>
void check_panel(const char* who, const char* what, const View& v, std::int64_t rows, int width) {
  if (std::int64_t(v.extent(0)) != rows || std::int64_t(v.extent(1)) != std::int64_t(width))
    fail(who, ": ", what, " is ", v.extent(0), " x ", v.extent(1), "; expected ", rows, " x ",
         width, " (the panel's rows x the layer's width)");
}

/// p[i] = 1 for i < n (the row of ones of a column sum). Asynchronous.
template <class Space, class Scalar>
void fill_ones(const Space& space, const char* label, Scalar* p, std::int64_t n) {
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) { p[i] = Scalar(1); });
}

/// out(r, j) = F(in(r, j) + b[j]) (b[j] = 0 where b is null). `in` may be
/// `out` itself: each entry is read before it is written. Asynchronous.
template <Activation F, class Space, class In, class Out, class Scalar>
void bias_activate_as(const Space& space, const char* label, const In& in, const Out& out,
                      const Scalar* b) {
  const auto m = std::int64_t(out.extent(0)), n = std::int64_t(out.extent(1));
  // Two loops rather than a test of b per entry, which GCC leaves unvectorized.
  if (b == nullptr)
    for_each_entry(
        space, label, m, n,
        KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) { out(r, j) = activate(F, in(r, j)); });
  else
    for_each_entry(
        space, label, m, n, KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
          out(r, j) = activate(F, in(r, j) + b[j]);
        });
}

/// bias_activate_as for the activation f. Asynchronous.
template <class Space, class In, class Out, class Scalar>
void bias_activate(const Space& space, const char* label, Activation f, const In& in,
                   const Out& out, const Scalar* b) {
  switch (f) {
    case Activation::relu: return bias_activate_as<Activation::relu>(space, label, in, out, b);
    case Activation::tanh: return bias_activate_as<Activation::tanh>(space, label, in, out, b);
    case Activation::sigmoid:
      return bias_activate_as<Activation::sigmoid>(space, label, in, out, b);
    case Activation::gelu: return bias_activate_as<Activation::gelu>(space, label, in, out, b);
    case Activation::identity: break;
  }
  bias_activate_as<Activation::identity>(space, label, in, out, b);
}

/// gelu(z), keeping z and its gate in *z_kept and *s_kept.
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar gelu_keeping(Scalar z, Scalar* z_kept, Scalar* s_kept) {
  const Scalar s = gelu_gate(z);
  *z_kept = z;
  *s_kept = s;
  return z * s;
}

/// out(r, j) = gelu(z), z = out(r, j) + b[j] (b null: no bias), keeping z
/// in z_kept and the gate sigma(2u) in s_kept (row-major like out) for
/// gelu_slope_times. Asynchronous.
template <class Space, class Out, class Scalar>
void bias_gelu_keep(const Space& space, const char* label, const Out& out, const Scalar* b,
                    Scalar* z_kept, Scalar* s_kept) {
  const auto m = std::int64_t(out.extent(0)), n = std::int64_t(out.extent(1));
  // Two loops rather than a test of b per entry, which GCC leaves unvectorized.
  if (b == nullptr)
    for_each_entry(
        space, label, m, n, KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
          out(r, j) = gelu_keeping(out(r, j), z_kept + (r * n + j), s_kept + (r * n + j));
        });
  else
    for_each_entry(
        space, label, m, n, KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
          out(r, j) = gelu_keeping(out(r, j) + b[j], z_kept + (r * n + j), s_kept + (r * n + j));
        });
}

/// delta(r, j) = dout(r, j) gelu'(z) from what bias_gelu_keep kept, with
/// no exp. Asynchronous.
template <class Space, class Dout, class Delta, class Scalar>
void gelu_slope_times(const Space& space, const char* label, const Dout& dout, const Scalar* z_kept,
                      const Scalar* s_kept, const Delta& delta) {
  const auto m = std::int64_t(delta.extent(0)), n = std::int64_t(delta.extent(1));
  for_each_entry(
      space, label, m, n, KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
        delta(r, j) = dout(r, j) * gelu_slope(z_kept[r * n + j], s_kept[r * n + j]);
      });
}

/// delta(r, j) = dout(r, j) F'(x(r, j)), x the pre-activations (AtPre) or
/// the activation's values. Asynchronous.
template <Activation F, bool AtPre, class Space, class Dout, class X, class Delta>
void slope_times_as(const Space& space, const char* label, const Dout& dout, const X& x,
                    const Delta& delta) {
  for_each_entry(
      space, label, std::int64_t(delta.extent(0)), std::int64_t(delta.extent(1)),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t j) {
        delta(r, j) =
            dout(r, j) * (AtPre ? activation_slope_at(F, x(r, j)) : activation_slope(F, x(r, j)));
      });
}

template <Activation F, class Space, class Dout, class X, class Delta>
void slope_times_at(const Space& space, const char* label, const Dout& dout, const X& x,
                    bool at_pre, const Delta& delta) {
  if (at_pre)
    slope_times_as<F, true>(space, label, dout, x, delta);
  else
    slope_times_as<F, false>(space, label, dout, x, delta);
}

/// delta = dout . f'(x), x the pre-activations (`at_pre`) or the values
/// (not for gelu, whose slope needs the pre-activation). Asynchronous.
template <class Space, class Dout, class X, class Delta>
void slope_times(const Space& space, const char* label, Activation f, const Dout& dout, const X& x,
                 bool at_pre, const Delta& delta) {
  switch (f) {
    case Activation::relu:
      return slope_times_at<Activation::relu>(space, label, dout, x, at_pre, delta);
    case Activation::tanh:
      return slope_times_at<Activation::tanh>(space, label, dout, x, at_pre, delta);
    case Activation::sigmoid:
      return slope_times_at<Activation::sigmoid>(space, label, dout, x, at_pre, delta);
    case Activation::gelu:
      if (!at_pre) fail(label, ": gelu's slope needs its pre-activation");
      return slope_times_as<Activation::gelu, true>(space, label, dout, x, delta);
    case Activation::identity: break;
  }
  slope_times_as<Activation::identity, true>(space, label, dout, x, delta);
}

}  // namespace detail
}  // namespace gradsum
