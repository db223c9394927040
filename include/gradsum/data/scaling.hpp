// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Per-feature standardization of a host Table.

#include <gradsum/core/error.hpp>
#include <gradsum/data/csv.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace gradsum {

/// Per-feature standardization x' = (x - mean) / scale, where scale is the
/// population standard deviation of the feature, or 1 where the deviation
/// is 0 (a constant column), so that constants map to exactly 0.
///
/// `fit` uses the corrected two-pass algorithm (mean first, then
/// var = (sum d^2 - (sum d)^2 / n) / n with d = x - mean; Chan, Golub and
/// LeVeque, "Algorithms for computing the sample variance", 1983) with a
/// compensated sum for the mean, on values scaled by a power of two so that
/// no intermediate overflows for any finite data.
struct StandardScaler {
  /// Mean of each feature.
  std::vector<double> mean;
  /// Divisor of each feature: its population standard deviation, or 1.
  std::vector<double> scale;
  /// Where the scaler was read from (a checkpoint's path; empty when fit
  /// here), named in messages.
  std::string source;

  /// Computes the mean and scale of every feature of `table`. Throws
  /// gradsum::Error if the table has no rows or its feature storage does
  /// not hold `num_rows * num_features` values.
  static StandardScaler fit(const Table& table);

  /// Replaces every feature x of `table` by (x - mean) / scale, in place.
  /// Throws gradsum::Error, naming both widths and the scaler's source, if
  /// `table.num_features` differs from the number of features this scaler
  /// was fit on.
  void transform(Table& table) const;

  /// Throws gradsum::Error, naming `function`, the source, the feature and
  /// the value, unless there are as many scales as means, every mean is
  /// finite and every scale positive and finite: what fit() makes of
  /// finite data, and what a scaler read from a file must hold.
  void validate(const char* function) const;
};

namespace detail {

inline void check_table_storage(const char* function, const Table& table) {
  if (table.features.size() != table.num_rows * table.num_features)
    fail(function, ": table '", table.source, "' holds ",
         table.features.size(), " feature values, expected num_rows * "
         "num_features = ", table.num_rows, " * ", table.num_features);
}

}  // namespace detail

inline StandardScaler StandardScaler::fit(const Table& table) {
  constexpr const char* function = "gradsum::StandardScaler::fit";
  if (table.num_rows == 0)
    fail(function, ": table '", table.source,
                 "' has no rows (expected at least one)");
  detail::check_table_storage(function, table);

  const std::size_t n = table.num_rows;
  const std::size_t d = table.num_features;
  const double* x = table.features.data();

  // Pass 0: range of each feature, for the constant test and the scaling.
  std::vector<double> lo(x, x + d);
  std::vector<double> hi(x, x + d);
  for (std::size_t i = 1; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double v = x[i * d + j];
      if (v < lo[j]) lo[j] = v;
      if (v > hi[j]) hi[j] = v;
    }
  // Values are multiplied by 2^-exponent[j] (exact) so |x| <= 1.
  std::vector<int> exponent(d, 0);
  for (std::size_t j = 0; j < d; ++j) {
    const double a = std::fmax(std::fabs(lo[j]), std::fabs(hi[j]));
    std::frexp(a, &exponent[j]);
  }

  // Pass 1: Neumaier-compensated sum of the scaled values. The per-column
  // accumulators share one allocation (separate vectors trip a false
  // -Wfree-nonheap-object in GCC 12 at -O3 under C++20).
  std::vector<double> work(4 * d, 0.0);
  double* sum = work.data();
  double* carry = sum + d;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double v = std::ldexp(x[i * d + j], -exponent[j]);
      const double t = sum[j] + v;
      carry[j] += std::fabs(sum[j]) >= std::fabs(v) ? (sum[j] - t) + v
                                                    : (v - t) + sum[j];
      sum[j] = t;
    }
  std::vector<double> scaled_mean(d);
  for (std::size_t j = 0; j < d; ++j) {
    double m = (sum[j] + carry[j]) / static_cast<double>(n);
    const double l = std::ldexp(lo[j], -exponent[j]);
    const double h = std::ldexp(hi[j], -exponent[j]);
    scaled_mean[j] = m < l ? l : (m > h ? h : m);
  }

  // Pass 2: corrected sum of squared deviations.
  double* dev = carry + d;
  double* dev2 = dev + d;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double e = std::ldexp(x[i * d + j], -exponent[j]) - scaled_mean[j];
      dev[j] += e;
      dev2[j] += e * e;
    }

  StandardScaler scaler;
  scaler.mean.resize(d);
  scaler.scale.resize(d);
  const double nd = static_cast<double>(n);
  for (std::size_t j = 0; j < d; ++j) {
    if (lo[j] == hi[j]) {
      // Exactly the constant, so that the column maps to exactly 0.
      scaler.mean[j] = lo[j];
      scaler.scale[j] = 1.0;
      continue;
    }
    scaler.mean[j] = std::ldexp(scaled_mean[j], exponent[j]);
    const double var = (dev2[j] - dev[j] * dev[j] / nd) / nd;
    const double sd = var > 0.0 ? std::ldexp(std::sqrt(var), exponent[j]) : 0.0;
    scaler.scale[j] = sd > 0.0 && std::isfinite(sd) ? sd : 1.0;
  }
  return scaler;
}

namespace detail {

inline std::string scaler_name(const StandardScaler& scaler) {
  return scaler.source.empty() ? "the scaler" : "the scaler of '" + scaler.source + "'";
}

inline void check_scaler_sizes(const char* function, const StandardScaler& scaler) {
  if (scaler.scale.size() != scaler.mean.size())
    fail(function, ": ", scaler_name(scaler), " holds ", scaler.mean.size(), " means but ",
         scaler.scale.size(), " scales (expected as many of each)");
}

}  // namespace detail

inline void StandardScaler::validate(const char* function) const {
  detail::check_scaler_sizes(function, *this);
  for (std::size_t j = 0; j < mean.size(); ++j) {
    if (!std::isfinite(mean[j]))
      fail(function, ": ", detail::scaler_name(*this), " has mean ", mean[j],
                   " for feature ", j, ", expected a finite number");
    if (!(scale[j] > 0) || !std::isfinite(scale[j]))
      fail(function, ": ", detail::scaler_name(*this), " has scale ", scale[j],
                   " for feature ", j, ", expected a positive finite number");
  }
}

inline void StandardScaler::transform(Table& table) const {
  constexpr const char* function = "gradsum::StandardScaler::transform";
  detail::check_scaler_sizes(function, *this);
  if (table.num_features != mean.size())
    fail(function, ": table '", table.source, "' has ",
                 table.num_features, " features, but ", detail::scaler_name(*this),
                 " was fit on ", mean.size(), " features");
  detail::check_table_storage(function, table);

  const std::size_t d = table.num_features;
  double* x = table.features.data();
  for (std::size_t i = 0; i < table.num_rows; ++i)
    for (std::size_t j = 0; j < d; ++j)
      x[i * d + j] = (x[i * d + j] - mean[j]) / scale[j];
}

}  // namespace gradsum
