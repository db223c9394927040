// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The layer contract: the pieces networks are composed of (a dense layer,
/// an activation, layer norm, embeddings, attention). A layer works on a
/// panel of rows, one row per token: `Tokens{sequences, length}` says how
/// the rows group into windows of consecutive tokens (length 1 for rows of
/// a table), which only layers that mix tokens (attention, position
/// embedding) look at.
///
/// A layer L is a small value type (trivially copyable, sized at run time)
/// offering, for Scalar float or double and an execution space Space:
///
///     int num_parameters() const;     // its slice of the flat parameters
///     int input_width() const;        // values per row in
///     int output_width() const;       // values per row out
///     std::size_t workspace_size(Tokens t) const;
///         // scalars it keeps between forward and backward of one panel
///         // (and scratch); 0 if none
///     std::string describe() const;   // e.g. "dense(128,512,gelu)"
///     void forward(const Space&, const Scalar* theta, Tokens t,
///                  LayerInput<Scalar, Memory> in, LayerOutput<Scalar, Memory> out,
///                  Scalar* work) const;
///     void backward(const Space&, const Scalar* theta, Tokens t,
///                   LayerInput<Scalar, Memory> in, LayerInput<Scalar, Memory> out,
///                   LayerInput<Scalar, Memory> dout, Scalar* g,
///                   LayerOutput<Scalar, Memory> din, Scalar* work) const;
///
/// `theta` and `g` point at the layer's own slice (num_parameters()
/// values) in the space's memory; `in` is t.rows() x input_width(), `out`
/// and `dout` t.rows() x output_width(), `work` holds workspace_size(t)
/// scalars and is the same between a panel's forward and its backward.
/// forward writes every value of `out`. backward, called after forward of
/// the same panel with the same `in`, `out` and `work`, *adds* dL/dtheta
/// into g (so the panels of a batch and the layers sharing a buffer sum
/// into it) and writes dL/din into `din` (every value), unless din.data()
/// is null (the first layer, whose input has no gradient). Both are
/// asynchronous on the space and allocate nothing. Every kernel is
/// labelled gradsum::layer::<name>::<what>.

#include <gradsum/core/kokkos_compat.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {

/// How a panel's rows group into windows of consecutive tokens:
/// `sequences` windows of `length` tokens, one row per token, window by
/// window. Rows of a table are windows of length 1.
struct Tokens {
  std::int64_t sequences = 0;
  int length = 1;
  /// sequences x length.
  KOKKOS_FUNCTION std::int64_t rows() const { return sequences * std::int64_t(length); }
};

/// A layer's input (rows x width, row-major) in Memory.
template <class Scalar, class Memory>
using LayerInput = Kokkos::View<const Scalar**, Kokkos::LayoutRight, Memory,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
/// A layer's output, or the gradient of its input, in Memory.
template <class Scalar, class Memory>
using LayerOutput =
    Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

namespace detail {

template <class L, class = void>
struct has_layer_shape : std::false_type {};
template <class L>
struct has_layer_shape<
    L, std::void_t<decltype(int(std::declval<const L&>().num_parameters())),
                   decltype(int(std::declval<const L&>().input_width())),
                   decltype(int(std::declval<const L&>().output_width())),
                   decltype(std::size_t(std::declval<const L&>().workspace_size(Tokens{}))),
                   decltype(std::string(std::declval<const L&>().describe()))>>
    : std::true_type {};

template <class L, class Space, class Scalar, class = void>
struct has_layer_forward : std::false_type {};
template <class L, class Space, class Scalar>
struct has_layer_forward<
    L, Space, Scalar,
    std::void_t<decltype(std::declval<const L&>().forward(
        std::declval<const Space&>(), std::declval<const Scalar*>(), Tokens{},
        std::declval<LayerInput<Scalar, typename Space::memory_space>>(),
        std::declval<LayerOutput<Scalar, typename Space::memory_space>>(),
        std::declval<Scalar*>()))>> : std::true_type {};

template <class L, class Space, class Scalar, class = void>
struct has_layer_backward : std::false_type {};
template <class L, class Space, class Scalar>
struct has_layer_backward<
    L, Space, Scalar,
    std::void_t<decltype(std::declval<const L&>().backward(
        std::declval<const Space&>(), std::declval<const Scalar*>(), Tokens{},
        std::declval<LayerInput<Scalar, typename Space::memory_space>>(),
        std::declval<LayerInput<Scalar, typename Space::memory_space>>(),
        std::declval<LayerInput<Scalar, typename Space::memory_space>>(),
        std::declval<Scalar*>(),
        std::declval<LayerOutput<Scalar, typename Space::memory_space>>(),
        std::declval<Scalar*>()))>> : std::true_type {};

}  // namespace detail

/// Whether L meets the layer contract on Space for Scalar.
template <class L, class Space, class Scalar>
struct is_layer
    : std::bool_constant<detail::has_layer_shape<L>::value &&
                         detail::has_layer_forward<L, Space, Scalar>::value &&
                         detail::has_layer_backward<L, Space, Scalar>::value> {};

/// Compile-time check of the layer contract, one message per missing part.
template <class L, class Space, class Scalar>
constexpr bool require_layer() {
  static_assert(detail::has_layer_shape<L>::value,
                "gradsum: a layer needs num_parameters(), input_width(), output_width(), "
                "workspace_size(Tokens) and describe() const members (see model/layer.hpp)");
  static_assert(detail::has_layer_forward<L, Space, Scalar>::value,
                "gradsum: a layer needs forward(space, theta, tokens, in, out, work) const "
                "for this space and scalar (see model/layer.hpp)");
  static_assert(detail::has_layer_backward<L, Space, Scalar>::value,
                "gradsum: a layer needs backward(space, theta, tokens, in, out, dout, g, din, "
                "work) const for this space and scalar (see model/layer.hpp)");
  return true;
}

}  // namespace gradsum
