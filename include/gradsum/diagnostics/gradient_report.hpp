// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What a gradient check found (GradientReport), the per-coordinate rule it
/// is judged by, the thresholds per scalar type, and the choice of the
/// coordinates a sampled check looks at. Shared by gradient_check,
/// gradient_check_sampled and check_model.

#include <gradsum/core/error.hpp>
#include <gradsum/data/sampler.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace gradsum {

/// Thresholds of the gradient checks for scalar type Scalar (float or
/// double). A coordinate j passes when
///
///     |a_j - n_j| / max(|a_j|, |n_j|, floor * G) <= tolerance
///
/// with a_j the analytic and n_j the central-difference partial derivative
/// and G the largest |a_k| or |n_k| at that point: relative for the
/// partials that matter, absolute (a fraction of the largest) for those
/// near zero, where central differences carry only rounding noise.
/// `step` is check_model's central-difference step, relative to
/// max(1, |theta_j|): about the cube root of the type's epsilon, which
/// balances truncation (h^2) against rounding (epsilon / h).
template <class Scalar>
struct GradientTolerance;
template <>
struct GradientTolerance<double> {
  static constexpr double tolerance = 1e-5;
  static constexpr double floor = 1e-3;
  static constexpr double step = 1e-5;
};
template <>
struct GradientTolerance<float> {
  static constexpr double tolerance = 2e-2;
  static constexpr double floor = 1e-2;
  static constexpr double step = 0x1p-7;
};

/// One checked partial derivative.
struct CoordinateError {
  int index = 0;        ///< the parameter j
  double analytic = 0;  ///< the model's backward (the first step, for two steps)
  double numeric = 0;   ///< central differences (the second step, for two steps)
  double error = 0;     ///< the per-coordinate error (GradientTolerance)
  int point = 0;        ///< which parameter vector (check_model checks several)
};

/// What a gradient check found: whether it passed, the worst coordinates
/// and one sentence saying what is wrong.
struct GradientReport {
  /// Whether every checked coordinate is within `tolerance` (and, for
  /// check_model, outputs are finite and backward adds into g).
  bool passed = true;
  /// ||a - n|| / (||a|| + ||n||) over the checked coordinates (the largest
  /// over the points): the global figure, which a single wrong partial among
  /// many right ones barely moves; `passed` judges each coordinate.
  double relative_error = 0;
  double tolerance = 0;    ///< the per-coordinate threshold used
  double worst_error = 0;  ///< the largest per-coordinate error
  /// The worst coordinates, worst first (at most five).
  std::vector<CoordinateError> worst;
  std::vector<int> coordinates;  ///< the parameters checked, ascending
  std::int64_t samples = 0;      ///< rows the objective was evaluated on
  int points = 0;                ///< parameter vectors checked
  int failed = 0;                ///< coordinate checks over the tolerance
  bool finite = true;            ///< forward, loss and backward gave finite values
  bool accumulates = true;       ///< backward adds into g (check_model only)
  /// One sentence: what is wrong, or what was checked when it passed.
  std::string diagnosis;

  /// Several lines for a person to read (see operator<<).
  std::string summary() const;
};

/// Prints GradientReport::summary().
inline std::ostream& operator<<(std::ostream& os, const GradientReport& report) {
  return os << report.summary();
}

namespace detail {

/// The per-coordinate error of GradientTolerance; infinite when either
/// value is not finite.
inline double coordinate_error(double analytic, double numeric, double floor) {
  if (!std::isfinite(analytic) || !std::isfinite(numeric)) return HUGE_VAL;
  const double scale = std::max({std::fabs(analytic), std::fabs(numeric), floor});
  return scale == 0 ? 0.0 : std::fabs(analytic - numeric) / scale;
}

/// "0.5" style numbers for sentences.
inline std::string short_number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

/// How a wrong partial relates to the right one, for the diagnosis.
inline std::string how_far(double analytic, double numeric) {
  if (!std::isfinite(analytic)) return "the analytic value is not finite";
  if (!std::isfinite(numeric)) return "the loss is not finite at theta +- h e_j";
  if (numeric == 0) return "central differences give 0";
  if (analytic == 0) return "the analytic value is 0";
  const double ratio = analytic / numeric;
  char buffer[64];
  if (ratio < 0 && std::fabs(std::fabs(ratio) - 1) < 1e-2) return "the sign is flipped";
  if (ratio < 0) std::snprintf(buffer, sizeof buffer, "opposite sign, factor %.3g", -ratio);
  else std::snprintf(buffer, sizeof buffer, "off by a factor %.3g", ratio);
  return buffer;
}

/// Collects the comparison point by point and fills a report.
class GradientJudge {
 public:
  GradientJudge(double tolerance, double floor) : tolerance_(tolerance), floor_(floor) {}

  /// a[i], n[i]: analytic and numeric partials of coordinate coords[i].
  void add_point(const std::vector<double>& a, const std::vector<double>& n,
                 const std::vector<int>& coords, int point) {
    double largest = 0, diff = 0, na = 0, nn = 0;
    for (std::size_t i = 0; i < coords.size(); ++i) {
      if (std::isfinite(a[i])) largest = std::max(largest, std::fabs(a[i]));
      if (std::isfinite(n[i])) largest = std::max(largest, std::fabs(n[i]));
      diff += (a[i] - n[i]) * (a[i] - n[i]);
      na += a[i] * a[i];
      nn += n[i] * n[i];
    }
    const double denominator = std::sqrt(na) + std::sqrt(nn);
    const double relative = denominator == 0 ? 0.0 : std::sqrt(diff) / denominator;
    if (!(relative <= relative_)) relative_ = relative;  // NaN sticks
    for (std::size_t i = 0; i < coords.size(); ++i) {
      const CoordinateError e{coords[i], a[i], n[i], coordinate_error(a[i], n[i], floor_ * largest),
                              point};
      if (e.error > tolerance_) ++failed_;
      ++checked_;
      worst_.push_back(e);
      std::sort(worst_.begin(), worst_.end(),
                [](const CoordinateError& a1, const CoordinateError& a2) {
                  return a1.error > a2.error;
                });
      if (worst_.size() > 5) worst_.pop_back();
    }
    ++points_;
  }

  /// Fills the gradient part of `report`; the diagnosis names the worst
  /// coordinate when one fails.
  void finish(GradientReport& report) const {
    report.tolerance = tolerance_;
    report.relative_error = relative_;
    report.worst = worst_;
    report.worst_error = worst_.empty() ? 0.0 : worst_.front().error;
    report.failed = failed_;
    report.points = points_;
    if (failed_ == 0) {
      report.diagnosis = concat("the analytic gradient matches central differences on ",
                                checked_, " coordinate check(s) (worst error ",
                                short_number(report.worst_error), ", tolerance ",
                                short_number(tolerance_), ")");
      return;
    }
    const CoordinateError& w = worst_.front();
    report.passed = false;
    report.diagnosis =
        concat("d/dtheta_", w.index, " differs from central differences",
               points_ > 1 ? concat(" at point ", w.point) : std::string(), ": analytic ",
               short_number(w.analytic), ", numeric ", short_number(w.numeric), " (",
               how_far(w.analytic, w.numeric), "); ", failed_, " of ", checked_,
               " coordinate check(s) exceed the tolerance ", short_number(tolerance_));
  }

 private:
  double tolerance_, floor_;
  double relative_ = 0;
  int failed_ = 0, checked_ = 0, points_ = 0;
  std::vector<CoordinateError> worst_;
};

/// A draw from U[-scale, scale].
inline double uniform_in(SplitMix64& rng, double scale) {
  return scale * (2 * (double(rng.next() >> 11) * 0x1.0p-53) - 1);
}

/// `count` distinct rows of 0 … n-1 drawn with `seed`: the first `count` of
/// a seeded Fisher-Yates shuffle, in the order drawn. count <= n.
inline std::vector<std::int64_t> draw_rows(std::int64_t n, std::int64_t count,
                                           std::uint64_t seed) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) rows[std::size_t(i)] = i;
  SplitMix64 rng(seed ^ 0x452821e638d01377ULL);
  for (std::int64_t i = 0; i < count; ++i)
    std::swap(rows[std::size_t(i)],
              rows[std::size_t(i + std::int64_t(rng.below(std::uint64_t(n - i))))]);
  rows.resize(std::size_t(count));
  return rows;
}

/// `count` distinct coordinates of 0 … P-1, ascending, chosen so that every
/// kind of parameter is looked at: the last ones (biases, output layers
/// and scalar parameters usually sit at the end), the first, an even spread
/// over the whole range, and seeded random ones. All of them when count >= P.
inline std::vector<int> spread_coordinates(int P, int count, std::uint64_t seed) {
  std::vector<int> out;
  if (count >= P) {
    for (int j = 0; j < P; ++j) out.push_back(j);
    return out;
  }
  std::vector<char> taken(std::size_t(P), 0);
  auto take = [&](int j) {
    if (int(out.size()) < count && !taken[std::size_t(j)]) {
      taken[std::size_t(j)] = 1;
      out.push_back(j);
    }
  };
  const int tail = std::max(1, std::min(count / 4, 16));
  for (int j = P - 1; j >= P - tail; --j) take(j);
  take(0);
  const int spread = (count - int(out.size())) / 2;
  for (int s = 1; s <= spread; ++s)
    take(int(std::int64_t(s) * std::int64_t(P - tail) / std::int64_t(spread + 1)));
  SplitMix64 rng(seed ^ 0xbe5466cf34e90c6cULL);
  while (int(out.size()) < count) take(int(rng.below(std::uint64_t(P))));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace detail

inline std::string GradientReport::summary() const {
  using detail::short_number;
  std::string out = concat("gradient check ", passed ? "passed" : "FAILED", ": ", diagnosis);
  if (points == 0)
    return out + "\n  the gradient was not compared: an earlier check failed";
  out += concat("\n  checked ", coordinates.size(), " coordinate(s) at ", points, " point(s) on ",
                samples, " sample(s); worst error ", short_number(worst_error), ", tolerance ",
                short_number(tolerance), "; relative error ", short_number(relative_error));
  for (const auto& w : worst)
    out += concat("\n  theta_", w.index, " (point ", w.point, "): analytic ",
                  short_number(w.analytic), ", numeric ", short_number(w.numeric), ", error ",
                  short_number(w.error));
  return out;
}

}  // namespace gradsum
