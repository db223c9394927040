// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Sequential<L...>: layers applied one after the other, itself a layer
/// (model/layer.hpp), so that compositions nest. Its parameters are the
/// layers' slices one after the other, in order; its workspace holds each
/// layer's own workspace, each inner layer's output (kept from forward for
/// backward) and two buffers that hand the input's gradient from a layer
/// to the one before it.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/layer.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace gradsum {
namespace detail {

/// f(std::integral_constant<std::size_t, I>()) for I = 0 … N - 1, in order.
template <class F, std::size_t... I>
void for_each_index(F&& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>()), ...);
}
/// The same for I = N - 1 … 0.
template <class F, std::size_t... I>
void for_each_index_reversed(F&& f, std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  (f(std::integral_constant<std::size_t, n - 1 - I>()), ...);
}

/// A rows x width panel at p (null p: no panel, as a layer's din may be).
template <class Scalar, class Memory>
LayerOutput<Scalar, Memory> panel_at(Scalar* p, std::int64_t rows, int width) {
  if (p == nullptr) return LayerOutput<Scalar, Memory>(nullptr, 0, 0);
  return LayerOutput<Scalar, Memory>(p, std::size_t(rows), std::size_t(width));
}

}  // namespace detail

/// Layers applied in order: layer i + 1 reads layer i's output, so each
/// layer's output width must be the next one's input width (checked when
/// constructed). A layer: see model/layer.hpp.
template <class... Layers>
class Sequential {
  static_assert(sizeof...(Layers) >= 1, "gradsum::Sequential: give it at least one layer");
  static constexpr std::size_t count = sizeof...(Layers);
  using Indices = std::make_index_sequence<count>;

 public:
  /// The layers, first applied first. A width that does not chain is a
  /// gradsum::Error naming both layers.
  explicit Sequential(const Layers&... layers) : layers_(layers...) {
    detail::for_each_index(
        [&](auto i) {
          constexpr std::size_t I = decltype(i)::value;
          if constexpr (I + 1 < count) {
            const auto& a = std::get<I>(layers_);
            const auto& b = std::get<I + 1>(layers_);
            if (a.output_width() != b.input_width())
              fail("gradsum::Sequential: layer ", I, " (", a.describe(), ") gives ",
                   a.output_width(), " values per row but layer ", I + 1, " (", b.describe(),
                   ") takes ", b.input_width());
          }
        },
        Indices());
  }

  /// Layer I.
  template <std::size_t I>
  const auto& layer() const {
    return std::get<I>(layers_);
  }
  /// Number of layers.
  static constexpr std::size_t size() { return count; }

  int num_parameters() const {
    int n = 0;
    detail::for_each_index([&](auto i) { n += std::get<decltype(i)::value>(layers_).num_parameters(); },
                           Indices());
    return n;
  }
  int input_width() const { return std::get<0>(layers_).input_width(); }
  int output_width() const { return std::get<count - 1>(layers_).output_width(); }

  /// Each layer's workspace, each inner layer's output, and two gradient
  /// buffers of the widest inner output.
  std::size_t workspace_size(Tokens t) const { return layout(t).total; }

  /// "sequential(a, b, …)" of the layers' descriptions.
  std::string describe() const {
    std::string s = "sequential(";
    detail::for_each_index(
        [&](auto i) {
          constexpr std::size_t I = decltype(i)::value;
          s += (I > 0 ? ", " : "") + std::get<I>(layers_).describe();
        },
        Indices());
    return s + ")";
  }

  /// Every layer's forward, in order. Asynchronous.
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar* work) const {
    const Layout places = layout(t);
    detail::for_each_index(
        [&](auto i) {
          constexpr std::size_t I = decltype(i)::value;
          const auto& l = std::get<I>(layers_);
          l.forward(space, theta + places.parameters[I], t, input_of<I, Scalar, Memory>(in, work, places, t),
                    output_of<I, Scalar, Memory>(out, work, places, t), work + places.work[I]);
        },
        Indices());
  }

  /// Every layer's backward, last first, each one's input gradient the
  /// output gradient of the one before; after each, reports that the
  /// gradient from its slice on is final (model/detail/backward_progress.hpp).
  /// Asynchronous.
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* theta, Tokens t, LayerInput<Scalar, Memory> in,
                LayerInput<Scalar, Memory> out, LayerInput<Scalar, Memory> dout, Scalar* g,
                LayerOutput<Scalar, Memory> din, Scalar* work) const {
    const Layout places = layout(t);
    LayerInput<Scalar, Memory> gradient = dout;
    detail::for_each_index_reversed(
        [&](auto i) {
          constexpr std::size_t I = decltype(i)::value;
          const auto& l = std::get<I>(layers_);
          LayerInput<Scalar, Memory> output = out;
          if constexpr (I + 1 < count)
            output = output_of<I, Scalar, Memory>(LayerOutput<Scalar, Memory>(), work, places, t);
          LayerOutput<Scalar, Memory> d_input =
              I == 0 ? din
                     : detail::panel_at<Scalar, Memory>(work + places.gradient[(count - 1 - I) % 2],
                                                        t.rows(), l.input_width());
          l.backward(space, theta + places.parameters[I], t,
                     input_of<I, Scalar, Memory>(in, work, places, t), output, gradient,
                     g + places.parameters[I], d_input, work + places.work[I]);
          detail::report_final(g + places.parameters[I]);
          gradient = d_input;
        },
        Indices());
  }

 private:
  // Where each layer's parameters, workspace and output lie, in scalars
  // from the start of the composition's slice and workspace.
  struct Layout {
    std::array<std::size_t, count> parameters{}, work{}, output{};
    std::array<std::size_t, 2> gradient{};
    std::size_t total = 0;
  };
  Layout layout(Tokens t) const {
    Layout places;
    std::size_t p = 0, w = 0, widest = 0;
    const auto rows = std::size_t(t.rows());
    detail::for_each_index(
        [&](auto i) {
          constexpr std::size_t I = decltype(i)::value;
          const auto& l = std::get<I>(layers_);
          places.parameters[I] = p;
          p += std::size_t(l.num_parameters());
          places.work[I] = w;
          w += l.workspace_size(t);
          if (I + 1 < count) {
            places.output[I] = w;
            w += rows * std::size_t(l.output_width());
            if (std::size_t(l.output_width()) > widest) widest = std::size_t(l.output_width());
          }
        },
        Indices());
    places.gradient[0] = w;
    places.gradient[1] = w + rows * widest;
    places.total = w + 2 * rows * widest;
    return places;
  }
  template <std::size_t I, class Scalar, class Memory>
  LayerInput<Scalar, Memory> input_of(LayerInput<Scalar, Memory> in, Scalar* work,
                                      const Layout& places, Tokens t) const {
    if constexpr (I == 0) return in;
    else
      return detail::panel_at<Scalar, Memory>(work + places.output[I - 1], t.rows(),
                                              std::get<I - 1>(layers_).output_width());
  }
  template <std::size_t I, class Scalar, class Memory>
  LayerOutput<Scalar, Memory> output_of(LayerOutput<Scalar, Memory> out, Scalar* work,
                                        const Layout& places, Tokens t) const {
    if constexpr (I + 1 == count) return out;
    else
      return detail::panel_at<Scalar, Memory>(work + places.output[I], t.rows(),
                                              std::get<I>(layers_).output_width());
  }

  std::tuple<Layers...> layers_;
};

}  // namespace gradsum
