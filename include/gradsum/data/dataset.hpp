// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/rows.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsum {

/// n samples of d features and one target each, in `MemorySpace`.
///
/// Features are a row-major (LayoutRight) n x d View, so one sample is d
/// contiguous values and a linear model reads each row once. Targets are
/// values for regression, 0/1 for binary classification and class indices
/// 0 … C-1 for softmax, stored as `Scalar`.
template <class Scalar,
          class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
class Dataset {
 public:
  using scalar_type = Scalar;
  using memory_space = MemorySpace;
  using features_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, MemorySpace>;
  using targets_view = Kokkos::View<Scalar*, MemorySpace>;

  /// An empty data set (no rows, no features).
  Dataset() = default;

  /// Wraps existing Views (no copy). `features.extent(0)` must equal
  /// `targets.extent(0)`.
  Dataset(features_view features, targets_view targets)
      : x_(features), y_(targets) {
    if (x_.extent(0) != y_.extent(0))
      detail::fail("gradsum::Dataset: features have ", x_.extent(0),
                   " rows but targets have ", y_.extent(0));
  }

  /// Copies row-major host data (`features` holds n*d values) into new
  /// Views in `MemorySpace`, converting to `Scalar`.
  static Dataset from_host(std::int64_t num_samples, int num_features,
                           const std::vector<double>& features,
                           const std::vector<double>& targets) {
    if (num_samples < 0 || num_features < 0)
      detail::fail("gradsum::Dataset::from_host: negative shape ",
                   num_samples, " x ", num_features);
    if (features.size() != std::size_t(num_samples) * std::size_t(num_features))
      detail::fail("gradsum::Dataset::from_host: expected ",
                   num_samples * num_features, " feature values (", num_samples,
                   " x ", num_features, "), got ", features.size());
    if (targets.size() != std::size_t(num_samples))
      detail::fail("gradsum::Dataset::from_host: expected ", num_samples,
                   " targets, got ", targets.size());
    features_view x(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                       "gradsum::data::features"),
                    num_samples, num_features);
    targets_view y(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                      "gradsum::data::targets"),
                   num_samples);
    auto hx = Kokkos::create_mirror_view(x);
    auto hy = Kokkos::create_mirror_view(y);
    for (std::int64_t i = 0; i < num_samples; ++i) {
      for (int j = 0; j < num_features; ++j)
        hx(i, j) = Scalar(features[std::size_t(i) * num_features + j]);
      hy(i) = Scalar(targets[std::size_t(i)]);
    }
    Kokkos::deep_copy(x, hx);
    Kokkos::deep_copy(y, hy);
    return Dataset(x, y);
  }

  /// Number of samples n.
  std::int64_t num_samples() const { return std::int64_t(x_.extent(0)); }
  /// Number of features d.
  int num_features() const { return int(x_.extent(1)); }
  /// All rows, as a row selection.
  RowRange all_rows() const { return RowRange{0, num_samples()}; }
  /// The n x d feature View.
  const features_view& features() const { return x_; }
  /// The n targets.
  const targets_view& targets() const { return y_; }

 private:
  features_view x_;
  targets_view y_;
};

}  // namespace gradsum
