// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/model/mlp.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace gradsum {

/// How initialize() fills a network's parameters. With fan_in and fan_out
/// the inputs and outputs of a layer:
///
///     constant(v)       every weight and bias = v (zeros(): v = 0)
///     uniform(a)        weights ~ U(-a, a)
///     normal(s)         weights ~ N(0, s^2)
///     glorot_uniform    weights ~ U(-a, a), a = sqrt(6 / (fan_in + fan_out))
///     glorot_normal     weights ~ N(0, 2 / (fan_in + fan_out))
///                       (Glorot & Bengio, AISTATS 2010)
///     he_uniform        weights ~ U(-a, a), a = sqrt(6 / fan_in)
///     he_normal         weights ~ N(0, 2 / fan_in)  (He et al., ICCV 2015)
///
/// Biases are zero except with constant(). Draws come from SplitMix64
/// seeded with `seed` (normals by Box–Muller), a sequence fixed by its
/// definition: every rank, compiler and standard library draws the same
/// values, so ranks need not broadcast them.
///
/// A constant start makes the hidden units of a layer interchangeable:
/// they receive identical gradients and stay identical forever (see
/// symmetric_units). Random starts break that symmetry.
struct Initializer {
  enum class Kind { constant, uniform, normal, glorot_uniform, glorot_normal, he_uniform, he_normal };
  Kind kind = Kind::glorot_uniform;
  double value = 0;        ///< constant: the value; uniform: the bound a; normal: the std s
  std::uint64_t seed = 0;  ///< seed of the draws

  static Initializer constant(double v) { return {Kind::constant, v, 0}; }
  static Initializer zeros() { return constant(0); }
  static Initializer uniform(double bound) { return {Kind::uniform, bound, 0}; }
  static Initializer normal(double stddev) { return {Kind::normal, stddev, 0}; }
  static Initializer glorot_uniform() { return {Kind::glorot_uniform, 0, 0}; }
  static Initializer glorot_normal() { return {Kind::glorot_normal, 0, 0}; }
  static Initializer he_uniform() { return {Kind::he_uniform, 0, 0}; }
  static Initializer he_normal() { return {Kind::he_normal, 0, 0}; }
  /// The same initializer drawing from another seed.
  Initializer with_seed(std::uint64_t s) const {
    Initializer i = *this;
    i.seed = s;
    return i;
  }

  /// Throws gradsum::Error when a bound or deviation is negative or not
  /// finite, or a constant is not finite.
  void validate() const {
    if (!std::isfinite(value))
      fail("gradsum::Initializer: the value must be finite, got ", value);
    if ((kind == Kind::uniform || kind == Kind::normal) && !(value >= 0))
      fail("gradsum::Initializer: the ", kind == Kind::uniform ? "bound" : "deviation",
                   " must be >= 0, got ", value);
  }

  /// Parses "zeros", "constant:V", "uniform[:A]" (A = 0.05), "normal[:S]"
  /// (S = 0.05), "glorot" (= glorot_uniform), "glorot_uniform",
  /// "glorot_normal", "he" (= he_normal), "he_normal", "he_uniform".
  static Initializer parse(const std::string& text) {
    const auto colon = text.find(':');
    const std::string name = text.substr(0, colon);
    const bool has_value = colon != std::string::npos;
    double v = 0;
    if (has_value) {
      const std::string number = text.substr(colon + 1);
      char* end = nullptr;
      v = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0')
        fail("gradsum::Initializer: '", number, "' in '", text, "' is not a number");
    }
    Initializer init;
    if (name == "zeros" && !has_value) init = zeros();
    else if (name == "constant" && has_value) init = constant(v);
    else if (name == "uniform") init = uniform(has_value ? v : 0.05);
    else if (name == "normal") init = normal(has_value ? v : 0.05);
    else if ((name == "glorot" || name == "glorot_uniform") && !has_value) init = glorot_uniform();
    else if (name == "glorot_normal" && !has_value) init = glorot_normal();
    else if ((name == "he" || name == "he_normal") && !has_value) init = he_normal();
    else if (name == "he_uniform" && !has_value) init = he_uniform();
    else
      fail("gradsum::Initializer: unknown initializer '", text,
                   "'; choose zeros, constant:V, uniform[:A], normal[:S], glorot, "
                   "glorot_normal, he, he_uniform");
    init.validate();
    return init;
  }
};

namespace detail {

// U[0, 1) from the top 53 bits.
inline double uniform01(SplitMix64& rng) { return double(rng.next() >> 11) * 0x1.0p-53; }

inline double standard_normal(SplitMix64& rng) {
  // Box–Muller; 1 - u is in (0, 1], so the logarithm is finite.
  const double u = 1.0 - uniform01(rng), v = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

}  // namespace detail

/// The parameters `init` gives `model`, on the host, in the model's layout.
inline std::vector<double> initial_parameters(const MLP& model, const Initializer& init) {
  init.validate();
  std::vector<double> theta(std::size_t(model.num_parameters()), 0.0);
  detail::SplitMix64 rng(init.seed ^ 0x243f6a8885a308d3ULL);
  using Kind = Initializer::Kind;
  for (int l = 0; l < model.num_layers(); ++l) {
    const double fan_in = model.layer_inputs(l), fan_out = model.layer_outputs(l);
    double bound = 0, stddev = 0;
    switch (init.kind) {
      case Kind::constant: break;
      case Kind::uniform: bound = init.value; break;
      case Kind::normal: stddev = init.value; break;
      case Kind::glorot_uniform: bound = std::sqrt(6.0 / (fan_in + fan_out)); break;
      case Kind::glorot_normal: stddev = std::sqrt(2.0 / (fan_in + fan_out)); break;
      case Kind::he_uniform: bound = std::sqrt(6.0 / fan_in); break;
      case Kind::he_normal: stddev = std::sqrt(2.0 / fan_in); break;
    }
    const bool is_normal = init.kind == Kind::normal || init.kind == Kind::glorot_normal ||
                           init.kind == Kind::he_normal;
    const std::size_t w0 = std::size_t(model.weight_offset(l));
    const std::size_t b0 = std::size_t(model.bias_offset(l));
    for (std::size_t j = w0; j < b0; ++j) {
      if (init.kind == Kind::constant) theta[j] = init.value;
      else if (is_normal) theta[j] = stddev * detail::standard_normal(rng);
      else theta[j] = bound * (2.0 * detail::uniform01(rng) - 1.0);
    }
    for (std::size_t j = b0; j < b0 + std::size_t(fan_out); ++j)
      theta[j] = init.kind == Kind::constant ? init.value : 0.0;
  }
  return theta;
}

/// Fills `theta` (a rank-1 View of length num_parameters(), any memory
/// space) with the parameters `init` gives `model`. Blocking. Every rank
/// calling it with the same model and initializer gets the same values.
template <class View>
void initialize(const MLP& model, const Initializer& init, const View& theta) {
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    fail("gradsum::initialize: theta has ", theta.extent(0),
                 " entries but the network has ", model.num_parameters(), " parameters");
  const auto values = initial_parameters(model, init);
  auto host = Kokkos::create_mirror_view(theta);
  for (std::size_t j = 0; j < values.size(); ++j)
    host(j) = typename View::non_const_value_type(values[j]);
  Kokkos::deep_copy(theta, host);
}

}  // namespace gradsum
