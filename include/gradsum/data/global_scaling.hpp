// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Standardization whose statistics cover every rank's rows.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/csv.hpp>
#include <gradsum/data/scaling.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

namespace gradsum {

/// The StandardScaler of the union of every rank's `mine` (sharded data):
/// the mean and population standard deviation of each feature over all
/// rows of all ranks, the same on every rank, so that every rank, and
/// later the test data and predictions, use one scaling.
///
/// Three small collectives through `aggregation` (a Step's Aggregation:
/// Local or Allreduce): the width and the feature ranges (maximum), then
/// the row count and sums, then the sums of (x - mean) and (x - mean)^2
/// (the corrected two-pass variance of Chan, Golub and LeVeque). A constant
/// column keeps its value as mean and 1 as scale, as StandardScaler::fit.
/// Throws the same gradsum::Error on every rank when the ranks' widths
/// differ or no rank has a row. Blocking; collective.
template <class Aggregation>
StandardScaler fit_global_scaler(const Table& mine, Aggregation& aggregation) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using Buffer = Kokkos::View<double*, Kokkos::HostSpace>;
  const Host host;
  const std::size_t n = mine.num_rows, d = mine.num_features;
  if (mine.features.size() != n * d)
    fail("gradsum::fit_global_scaler: table '", mine.source, "' holds ",
                 mine.features.size(), " feature values for ", n, " rows of ", d, " features");
  Buffer width("gradsum::scaling::width", 2);
  width(0) = double(d);
  width(1) = -double(d);
  aggregation.aggregate_max(host, width);
  if (width(0) != -width(1))
    fail("gradsum::fit_global_scaler: the ranks' tables have between ", -width(1),
                 " and ", width(0), " features; every rank must hold the same columns");
  const double lowest = -std::numeric_limits<double>::infinity();
  Buffer range("gradsum::scaling::range", 2 * d);
  for (std::size_t j = 0; j < 2 * d; ++j) range(j) = lowest;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double v = mine.features[i * d + j];
      range(j) = v > range(j) ? v : range(j);              // max
      range(d + j) = -v > range(d + j) ? -v : range(d + j);  // -min
    }
  aggregation.aggregate_max(host, range);

  Buffer sums("gradsum::scaling::sums", d + 1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) sums(j) += mine.features[i * d + j];
  sums(d) = double(n);
  aggregation.aggregate(host, sums);
  const double count = sums(d);
  if (!(count > 0))
    fail("gradsum::fit_global_scaler: no rank holds a row (expected at least one)");

  StandardScaler scaler;
  scaler.mean.resize(d);
  scaler.scale.assign(d, 1.0);
  for (std::size_t j = 0; j < d; ++j) scaler.mean[j] = sums(j) / count;
  Buffer deviations("gradsum::scaling::deviations", 2 * d);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double e = mine.features[i * d + j] - scaler.mean[j];
      deviations(j) += e;
      deviations(d + j) += e * e;
    }
  aggregation.aggregate(host, deviations);
  for (std::size_t j = 0; j < d; ++j) {
    const double hi = range(j), lo = -range(d + j);
    if (lo == hi) {
      scaler.mean[j] = lo;  // exactly the constant, which maps to exactly 0
      continue;
    }
    const double var = (deviations(d + j) - deviations(j) * deviations(j) / count) / count;
    const double sd = var > 0 ? std::sqrt(var) : 0.0;
    scaler.scale[j] = sd > 0 && std::isfinite(sd) ? sd : 1.0;
  }
  return scaler;
}

}  // namespace gradsum
