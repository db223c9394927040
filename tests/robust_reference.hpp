// SPDX-License-Identifier: Apache-2.0
#pragma once

// Independent host references for the robust aggregation rules, and the
// textbook corrupted-worker case, shared by the in-process and MPI tests.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum_test {

enum class Rule { median, trimmed, clip };

/// The sum-scale robust aggregate of W host vectors (workers[w][j]) in
/// long double, straight from the definitions: per coordinate the sorted
/// values' median (mean of the middle two for even W) or the mean of the
/// values left after dropping k at each end, times W; or the sum of the
/// vectors each scaled to norm <= c. Coordinates from `robust` on are
/// summed.
inline std::vector<long double> robust_reference(const std::vector<std::vector<double>>& workers,
                                                 Rule rule, int k, double c, std::size_t robust) {
  const std::size_t W = workers.size(), n = workers[0].size();
  std::vector<long double> out(n, 0.0L);
  std::vector<long double> scale(W, 1.0L);
  if (rule == Rule::clip)
    for (std::size_t w = 0; w < W; ++w) {
      long double s = 0;
      for (std::size_t j = 0; j < robust; ++j) s += (long double)workers[w][j] * workers[w][j];
      const long double norm = std::sqrt(s);
      if (norm > c) scale[w] = c / norm;
    }
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<long double> v(W);
    for (std::size_t w = 0; w < W; ++w) v[w] = workers[w][j];
    if (j >= robust) {
      for (auto x : v) out[j] += x;
      continue;
    }
    std::sort(v.begin(), v.end());
    if (rule == Rule::median) {
      out[j] = (W % 2 ? v[W / 2] : (v[W / 2 - 1] + v[W / 2]) / 2) * (long double)W;
    } else if (rule == Rule::trimmed) {
      long double s = 0;
      for (std::size_t w = std::size_t(k); w < W - std::size_t(k); ++w) s += v[w];
      out[j] = s / (long double)(W - 2 * std::size_t(k)) * (long double)W;
    } else {
      for (std::size_t w = 0; w < W; ++w) out[j] += scale[w] * (long double)workers[w][j];
    }
  }
  return out;
}

/// The textbook corrupted-worker case: four workers' gradients of length
/// 4 (three weights and a bias, as Linear(3) with squared error at theta =
/// 0 and target -1 gives x and 1 for one row x). Workers 0-2 are clean and
/// similar (entries 0.9 … 1.1, bias 1, norm about 2); worker 3 points
/// away from them, (c, -c, 0, 1) with c chosen so that its norm is ten
/// times the clean norm 2: 2c^2 + 1 = 400.
struct Textbook {
  static std::vector<std::vector<double>> rows() {
    const double c = std::sqrt((400.0 - 1.0) / 2.0);
    return {{1.0, 1.1, 0.9}, {0.9, 1.0, 1.1}, {1.1, 0.9, 1.0}, {c, -c, 0.0}};
  }
  /// Worker w's gradient (x, 1).
  static std::vector<std::vector<double>> gradients() {
    std::vector<std::vector<double>> g;
    for (const auto& x : rows()) g.push_back({x[0], x[1], x[2], 1.0});
    return g;
  }
  /// The clean aggregate: what the sum over four workers would be if the
  /// corrupted one were like the others, W times the clean workers' mean.
  static std::vector<double> clean() {
    const auto g = gradients();
    std::vector<double> s(4, 0.0);
    for (int w = 0; w < 3; ++w)
      for (int j = 0; j < 4; ++j) s[j] += g[w][j] * 4.0 / 3.0;
    return s;
  }
  /// Per coordinate, W times the spread (max - min) of the clean workers:
  /// a median or trimmed mean (k = 1) of four values of which three are
  /// clean lies between the smallest and largest clean value, so its sum
  /// scale W m is within this distance of the clean aggregate.
  static std::vector<double> spread_bound() {
    const auto g = gradients();
    std::vector<double> b(4);
    for (int j = 0; j < 4; ++j) {
      const double lo = std::min({g[0][j], g[1][j], g[2][j]});
      const double hi = std::max({g[0][j], g[1][j], g[2][j]});
      b[j] = 4.0 * (hi - lo);
    }
    return b;
  }
};

/// Cosine of the angle between two vectors.
template <class A, class B>
double cosine(const A& a, const B& b, std::size_t n) {
  long double ab = 0, aa = 0, bb = 0;
  for (std::size_t j = 0; j < n; ++j) {
    ab += (long double)a[j] * b[j];
    aa += (long double)a[j] * a[j];
    bb += (long double)b[j] * b[j];
  }
  return double(ab / std::sqrt(aa * bb));
}

}  // namespace gradsum_test
