// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/model/mlp.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gradsum {

/// Norms of one layer's block of the gradient and of the parameters
/// (weights and biases together).
struct LayerNorms {
  int layer = 0;
  double gradient_norm = 0;   ///< ||g_l||
  double parameter_norm = 0;  ///< ||theta_l||
  /// ||g_l|| / ||theta_l||: the relative change a unit learning rate
  /// would make; +infinity when theta_l = 0 and g_l != 0, 0 when both are 0.
  double ratio = 0;
};

/// When gradient_health() raises a warning.
struct HealthThresholds {
  /// Vanishing: ||g_0|| / ||g_{L-1}||, the first layer's gradient norm over
  /// the last layer's, below this.
  double vanishing = 1e-3;
  /// Exploding: some layer's ||g_l|| / ||theta_l|| above this (for a layer
  /// with theta_l != 0), or any gradient entry not finite.
  double exploding = 1e3;
};

/// What gradient_health() found.
struct HealthReport {
  std::vector<LayerNorms> layers;
  double first_to_last = 1;  ///< ||g_0|| / ||g_{L-1}|| (1 for one layer)
  bool vanishing = false;
  bool exploding = false;
  bool nonfinite = false;
  /// One line per warning, naming the layer and the numbers.
  std::vector<std::string> warnings;
  bool healthy() const { return !vanishing && !exploding && !nonfinite; }
};

/// The norms of every layer's gradient and parameter blocks. `theta` and
/// `gradient` are rank-1 Views of length num_parameters() in any memory
/// space (copied to the host: a diagnostic, not for the hot path). Blocking.
template <class Theta, class Gradient>
std::vector<LayerNorms> layer_norms(const MLP& model, const Theta& theta,
                                    const Gradient& gradient) {
  const std::int64_t P = model.num_parameters();
  if (std::int64_t(theta.extent(0)) != P || std::int64_t(gradient.extent(0)) != P)
    fail("gradsum::layer_norms: theta has ", theta.extent(0),
                 " and the gradient ", gradient.extent(0), " entries; the network has ", P,
                 " parameters");
  auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gradient);
  std::vector<LayerNorms> out;
  for (int l = 0; l < model.num_layers(); ++l) {
    const int end = l + 1 < model.num_layers() ? model.weight_offset(l + 1)
                                               : model.num_parameters();
    double gg = 0, tt = 0;
    for (int j = model.weight_offset(l); j < end; ++j) {
      gg += double(g(j)) * double(g(j));
      tt += double(t(j)) * double(t(j));
    }
    LayerNorms n;
    n.layer = l;
    n.gradient_norm = std::sqrt(gg);
    n.parameter_norm = std::sqrt(tt);
    n.ratio = n.parameter_norm > 0 ? n.gradient_norm / n.parameter_norm
              : n.gradient_norm > 0 ? HUGE_VAL
                                    : 0.0;
    out.push_back(n);
  }
  return out;
}

/// Judges per-layer norms: vanishing gradients (the first layer's norm
/// orders of magnitude below the last layer's: the early layers barely
/// learn), exploding gradients (a layer's gradient large against its
/// parameters, or not finite).
inline HealthReport judge_health(const std::vector<LayerNorms>& layers,
                          const HealthThresholds& limits = {}) {
  HealthReport r;
  r.layers = layers;
  char line[256];
  for (const auto& n : layers) {
    if (!std::isfinite(n.gradient_norm)) {
      r.nonfinite = true;
      std::snprintf(line, sizeof line, "layer %d: gradient not finite (norm %g)", n.layer,
                    n.gradient_norm);
      r.warnings.push_back(line);
    } else if (n.parameter_norm > 0 && n.ratio > limits.exploding) {
      r.exploding = true;
      std::snprintf(line, sizeof line,
                    "layer %d: exploding gradient: |g| = %.3g is %.3g times |theta| = %.3g "
                    "(threshold %g)",
                    n.layer, n.gradient_norm, n.ratio, n.parameter_norm, limits.exploding);
      r.warnings.push_back(line);
    }
  }
  if (layers.size() >= 2) {
    const double first = layers.front().gradient_norm, last = layers.back().gradient_norm;
    r.first_to_last = last > 0 ? first / last : first > 0 ? HUGE_VAL : 1.0;
    if (std::isfinite(first) && std::isfinite(last) && last > 0 &&
        r.first_to_last < limits.vanishing) {
      r.vanishing = true;
      std::snprintf(line, sizeof line,
                    "vanishing gradient: |g| of layer 0 is %.3g, %.3g times that of layer %d "
                    "(%.3g; threshold %g)",
                    first, r.first_to_last, int(layers.size()) - 1, last, limits.vanishing);
      r.warnings.push_back(line);
    }
  }
  return r;
}

/// layer_norms() then judge_health(). Blocking.
template <class Theta, class Gradient>
HealthReport gradient_health(const MLP& model, const Theta& theta, const Gradient& gradient,
                             const HealthThresholds& limits = {}) {
  return judge_health(layer_norms(model, theta, gradient), limits);
}

/// Hidden units of one layer whose incoming weights and bias are identical.
struct SymmetricGroup {
  int layer = 0;
  std::vector<int> units;
};

/// Groups of two or more hidden units (output units excluded: the loss
/// tells them apart) whose incoming weights and biases agree to within
/// `tolerance` (absolute; 0: bitwise equal values). Such units compute the
/// same function, receive the same gradient and stay identical: the layer
/// behaves as fewer units (a constant initialization does this). Blocking.
template <class Theta>
std::vector<SymmetricGroup> symmetric_units(const MLP& model, const Theta& theta,
                                            double tolerance = 0) {
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    fail("gradsum::symmetric_units: theta has ", theta.extent(0),
                 " entries; the network has ", model.num_parameters(), " parameters");
  auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  std::vector<SymmetricGroup> groups;
  for (int l = 0; l + 1 < model.num_layers(); ++l) {
    const int n_in = model.layer_inputs(l), n_out = model.layer_outputs(l);
    const int w = model.weight_offset(l), b = model.bias_offset(l);
    auto same = [&](int u, int v) {
      if (std::fabs(double(t(b + u)) - double(t(b + v))) > tolerance) return false;
      for (int k = 0; k < n_in; ++k)
        if (std::fabs(double(t(w + k * n_out + u)) - double(t(w + k * n_out + v))) > tolerance)
          return false;
      return true;
    };
    std::vector<bool> taken(std::size_t(n_out), false);
    for (int u = 0; u < n_out; ++u) {
      if (taken[std::size_t(u)]) continue;
      SymmetricGroup g{l, {u}};
      for (int v = u + 1; v < n_out; ++v)
        if (!taken[std::size_t(v)] && same(u, v)) {
          taken[std::size_t(v)] = true;
          g.units.push_back(v);
        }
      if (g.units.size() >= 2) groups.push_back(g);
    }
  }
  return groups;
}

}  // namespace gradsum
