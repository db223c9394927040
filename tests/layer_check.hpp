// SPDX-License-Identifier: Apache-2.0
#pragma once

// One layer alone against central differences, in double: with the fixed
// weights w (random), L(theta, in) = sum over r, j of out(r, j) w(r, j),
// so dout = w. The layer's backward must give dL/dtheta on every
// coordinate (added into a gradient buffer that already holds values),
// dL/din on every coordinate, and add the same again on a second call.

#include <gradsum/core/error.hpp>
#include <gradsum/model/layer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace gradsum_test {

/// What check_layer found: the largest relative error of dL/dtheta and
/// dL/din against central differences, and of the second backward's sum.
struct LayerErrors {
  double parameters = 0, inputs = 0, accumulate = 0;
};

namespace detail {

// The layer's output and the workspace after forward, on the space.
template <class Space, class Layer>
struct LayerRun {
  using Memory = typename Space::memory_space;
  using Vector = Kokkos::View<double*, Memory>;
  Layer layer;
  gradsum::Tokens t;
  Vector theta, in, out, work, g, din, dout;

  LayerRun(const Layer& l, gradsum::Tokens tokens) : layer(l), t(tokens) {
    const std::int64_t rows = t.rows();
    theta = Vector("theta", std::size_t(layer.num_parameters()));
    in = Vector("in", std::size_t(rows * layer.input_width()));
    out = Vector("out", std::size_t(rows * layer.output_width()));
    work = Vector("work", layer.workspace_size(t));
    g = Vector("g", std::size_t(layer.num_parameters()));
    din = Vector("din", std::size_t(rows * layer.input_width()));
    dout = Vector("dout", std::size_t(rows * layer.output_width()));
  }
  gradsum::LayerInput<double, Memory> input(const Vector& v, int width) const {
    return gradsum::LayerInput<double, Memory>(v.data(), std::size_t(t.rows()),
                                               std::size_t(width));
  }
  gradsum::LayerOutput<double, Memory> output(const Vector& v, int width) const {
    return gradsum::LayerOutput<double, Memory>(v.data(), std::size_t(t.rows()),
                                                std::size_t(width));
  }
  void forward() const {
    layer.forward(Space(), theta.data(), t, input(in, layer.input_width()),
                  output(out, layer.output_width()), work.data());
    Space().fence();
  }
  void backward(bool with_din) const {
    layer.backward(Space(), theta.data(), t, input(in, layer.input_width()),
                   input(out, layer.output_width()), input(dout, layer.output_width()), g.data(),
                   with_din ? output(din, layer.input_width())
                            : gradsum::LayerOutput<double, Memory>(nullptr, 0, 0),
                   work.data());
    Space().fence();
  }
};

template <class V>
std::vector<double> to_host(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}
template <class V>
void from_host(const V& v, const std::vector<double>& values) {
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < values.size(); ++i) h(i) = values[i];
  Kokkos::deep_copy(v, h);
}
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
// |a - b| / (|a| + |b|) over the whole vectors (0 when both are 0).
inline double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  const double scale = std::sqrt(na) + std::sqrt(nb);
  return scale > 0 ? std::sqrt(diff) / scale : 0.0;
}

}  // namespace detail

/// The message of the gradsum::Error that layer.validate() throws, or ""
/// when it accepts the layer.
template <class Layer>
std::string validate_error(const Layer& layer) {
  try {
    layer.validate();
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "";
}

/// Checks `layer` on the panel `t` at random parameters and inputs drawn
/// from `seed` (inputs from `input_value(r, j, rng)` when given, for
/// layers whose inputs are token ids; then `differentiable_input` false
/// skips dL/din). Returns the errors; the test decides the tolerance.
template <class Space, class Layer>
LayerErrors check_layer(
    const Layer& layer, gradsum::Tokens t, std::uint64_t seed,
    const std::function<double(std::int64_t, int, std::mt19937_64&)>& input_value = {},
    bool differentiable_input = true, double step = 1e-6) {
  INFO("layer " << layer.describe() << ", " << t.sequences << " x " << t.length
                << " tokens, seed " << seed);
  static_assert(gradsum::require_layer<Layer, Space, double>());
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.5);
  detail::LayerRun<Space, Layer> run(layer, t);
  const std::int64_t rows = t.rows();
  std::vector<double> theta(std::size_t(layer.num_parameters())), in(run.in.extent(0)),
      w(run.out.extent(0)), before(theta.size());
  for (auto& v : theta) v = normal(rng);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < layer.input_width(); ++j)
      in[std::size_t(r * layer.input_width() + j)] =
          input_value ? input_value(r, j, rng) : normal(rng);
  for (auto& v : w) v = normal(rng);
  for (auto& v : before) v = normal(rng);
  detail::from_host(run.theta, theta);
  detail::from_host(run.in, in);
  detail::from_host(run.dout, w);
  detail::from_host(run.g, before);

  auto objective = [&](const std::vector<double>& th, const std::vector<double>& x) {
    detail::from_host(run.theta, th);
    detail::from_host(run.in, x);
    run.forward();
    return detail::dot(detail::to_host(run.out), w);
  };
  // The analytic gradients, at (theta, in).
  run.forward();
  run.backward(differentiable_input);
  std::vector<double> g = detail::to_host(run.g);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] -= before[i];
  const std::vector<double> din = detail::to_host(run.din);
  run.backward(differentiable_input);  // adds the same again
  std::vector<double> twice = detail::to_host(run.g);
  for (std::size_t i = 0; i < twice.size(); ++i) twice[i] -= before[i] + g[i];

  LayerErrors errors;
  errors.accumulate = detail::relative_error(g, twice);
  // Central differences of f over every coordinate of x.
  auto central = [step](const std::vector<double>& x, const auto& f) {
    std::vector<double> d(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::vector<double> up = x, down = x;
      const double h = step * (1 + std::abs(x[i]));
      up[i] += h;
      down[i] -= h;
      d[i] = (f(up) - f(down)) / (2 * h);
    }
    return d;
  };
  errors.parameters = detail::relative_error(
      g, central(theta, [&](const std::vector<double>& th) { return objective(th, in); }));
  if (differentiable_input)
    errors.inputs = detail::relative_error(
        din, central(in, [&](const std::vector<double>& x) { return objective(theta, x); }));
  return errors;
}

}  // namespace gradsum_test
