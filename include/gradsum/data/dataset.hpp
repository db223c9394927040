// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/rows.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum {
namespace detail {

/// The layouts a Dataset holds features in: Kokkos' three. Rows that are
/// not contiguous (LayoutLeft, strided columns) are gathered per sample
/// in the kernels (data/feature_rows.hpp).
template <class Layout>
struct AcceptsFeaturesLayout {
  static_assert(std::is_same<Layout, Kokkos::LayoutRight>::value ||
                    std::is_same<Layout, Kokkos::LayoutLeft>::value ||
                    std::is_same<Layout, Kokkos::LayoutStride>::value,
                "gradsum::Dataset: features must be LayoutRight, LayoutLeft or LayoutStride; "
                "got another layout: use Dataset::copy_from");
  static constexpr bool value = true;
};

/// Kokkos' name of a layout, for messages.
template <class Layout>
const char* layout_name() {
  if (std::is_same<Layout, Kokkos::LayoutRight>::value) return "LayoutRight";
  if (std::is_same<Layout, Kokkos::LayoutLeft>::value) return "LayoutLeft";
  return "LayoutStride";
}

/// What a Dataset wraps a View `V` of `rank` in: a View of `Scalar` in
/// `Memory`, named by `role` in the messages.
template <class V, int Rank, class Scalar, class Memory>
struct AcceptsView {
  static_assert(Kokkos::is_view<V>::value,
                "gradsum::Dataset: features and targets must be Kokkos Views");
  static_assert(int(V::rank) == Rank,
                "gradsum::Dataset: features must be a rank-2 View (n x d) and targets a rank-1 "
                "View (n)");
  static_assert(std::is_same<typename V::value_type, Scalar>::value,
                "gradsum::Dataset: features and targets must hold the Dataset's (non-const) "
                "Scalar: use Dataset::copy_from, which converts");
  static_assert(std::is_same<typename V::memory_space, Memory>::value,
                "gradsum::Dataset: features and targets must live in the Dataset's memory "
                "space: use Dataset::copy_from, which copies between spaces");
  static constexpr bool value = true;
};

/// The Dataset layout that holds features X and targets Y without a copy:
/// LayoutStride when either is strided, else X's own (which the Dataset
/// then accepts or refuses with its message).
template <class X, class Y>
using deduced_layout_t =
    std::conditional_t<std::is_same<typename X::array_layout, Kokkos::LayoutStride>::value ||
                           std::is_same<typename Y::array_layout, Kokkos::LayoutStride>::value,
                       Kokkos::LayoutStride, typename X::array_layout>;

/// staged(i, ...) = Scalar(v(i, ...)) for row i (a functor: CUDA's
/// lambdas cannot capture inside `if constexpr`).
template <class Scalar, class Staged, class V>
struct ConvertRows {
  Staged staged;
  V v;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if constexpr (int(V::rank) == 2) {
      for (std::size_t j = 0; j < staged.extent(1); ++j) staged(i, j) = Scalar(v(i, j));
    } else {
      staged(i) = Scalar(v(i));
    }
  }
};

template <class Scalar, int Rank>
using right_data_t = std::conditional_t<Rank == 2, Scalar**, Scalar*>;

/// A copy of the rank-1 or rank-2 View `v` as a LayoutRight View of
/// `Scalar` in `Memory`: converted in v's own space, then moved across
/// spaces as one contiguous block. Blocking. (A declared return
/// type: CUDA's extended lambdas refuse a deduced one.)
template <class Scalar, class Memory, class V>
Kokkos::View<right_data_t<Scalar, int(V::rank)>, Kokkos::LayoutRight, Memory> copy_as_layout_right(
    const V& v, const char* label) {
  using Source = typename V::memory_space;
  using Staged = Kokkos::View<right_data_t<Scalar, int(V::rank)>, Kokkos::LayoutRight, Source>;
  const auto alloc = Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
  Staged staged;
  if constexpr (int(V::rank) == 2) staged = Staged(alloc, v.extent(0), v.extent(1));
  else staged = Staged(alloc, v.extent(0));
  Kokkos::parallel_for(
      "gradsum::data::copy_from",
      Kokkos::RangePolicy<typename V::execution_space, Kokkos::IndexType<std::int64_t>>(
          0, std::int64_t(v.extent(0))),
      ConvertRows<Scalar, Staged, V>{staged, v});
  Kokkos::fence();
  if constexpr (std::is_same<Source, Memory>::value) {
    return staged;
  } else {
    const Kokkos::View<typename Staged::data_type, Kokkos::LayoutRight, Memory> out(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), staged.layout());
    Kokkos::deep_copy(out, staged);
    return out;
  }
}

}  // namespace detail

/// n samples of d features and one target each, in `MemorySpace`.
///
/// Features are an n x d View of any of Kokkos' layouts, read in place:
/// row-major (`Layout` = LayoutRight, the default), where a linear model
/// reads each row once; column-major (LayoutLeft: fields as a simulation
/// stores them, and Kokkos' default on GPUs); or LayoutStride (the columns
/// of a wider table, see from_table, or any strides). Rows that are not
/// contiguous are gathered per sample in the kernels (at most
/// GRADSUM_MAX_GATHERED_FEATURES values; the layer-wise path gathers
/// panels, without that limit), which gives the same gradients and
/// predictions as LayoutRight. Targets are values for regression, 0/1
/// for binary classification and class indices 0 … C-1 for softmax,
/// stored as `Scalar`; contiguous, or any stride where `Layout` is
/// LayoutStride. Views of another scalar type or memory space go through
/// copy_from.
template <class Scalar, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space,
          class Layout = Kokkos::LayoutRight>
class Dataset {
  static_assert(detail::AcceptsFeaturesLayout<Layout>::value, "");

  static constexpr bool strided = std::is_same<Layout, Kokkos::LayoutStride>::value;

 public:
  using scalar_type = Scalar;
  using memory_space = MemorySpace;
  using array_layout = Layout;
  using features_view = Kokkos::View<Scalar**, Layout, MemorySpace>;
  using targets_view = std::conditional_t<strided, Kokkos::View<Scalar*, Kokkos::LayoutStride, MemorySpace>,
                                          Kokkos::View<Scalar*, MemorySpace>>;

  /// An empty data set (no rows, no features).
  Dataset() = default;

  /// Wraps existing Views (no copy): `features` an n x d View and
  /// `targets` an n View, both of `Scalar` in `MemorySpace`. A strided
  /// View given to a LayoutRight or LayoutLeft Dataset must have exactly
  /// the strides of that layout. Throws gradsum::Error, naming the
  /// argument, when rows or strides do not fit.
  /// `gradsum::Dataset data(x, y);` deduces the type from the Views.
  template <class X, class Y>
  Dataset(const X& features, const Y& targets)
      : x_(checked_features(features)), y_(checked_targets(targets)) {
    if (x_.extent(0) != y_.extent(0))
      fail("gradsum::Dataset: features have ", x_.extent(0),
                   " rows but targets have ", y_.extent(0));
  }

  /// Wraps the columns of an n x c `table` (a View of `Scalar` in
  /// `MemorySpace`, any layout) without copying: column `target_column` is
  /// the target, the other c - 1 columns the features. The target must be
  /// the first or the last column, so that the features are one strided
  /// View; a target in between is refused (copy the columns with
  /// copy_from). Throws gradsum::Error naming the column.
  template <class Table>
  static Dataset<Scalar, MemorySpace, Kokkos::LayoutStride> from_table(const Table& table,
                                                                       int target_column) {
    static_assert(detail::AcceptsView<Table, 2, Scalar, MemorySpace>::value, "");
    static_assert(detail::AcceptsFeaturesLayout<typename Table::array_layout>::value, "");
    const std::int64_t c = std::int64_t(table.extent(1));
    if (target_column < 0 || target_column >= c)
      fail("gradsum::Dataset::from_table: target_column is ", target_column,
                   "; expected a column of the table, 0 to ", c - 1, " (it has ", c,
                   " columns)");
    if (target_column != 0 && target_column != c - 1)
      fail("gradsum::Dataset::from_table: target_column ", target_column,
                   " lies between feature columns of the ", c,
                   "-column table, so a row's features are not contiguous; put the target "
                   "first (0) or last (", c - 1, "), or copy with Dataset::copy_from");
    const std::int64_t first = target_column == 0 ? 1 : 0;
    return Dataset<Scalar, MemorySpace, Kokkos::LayoutStride>(
        Kokkos::subview(table, Kokkos::ALL(), Kokkos::make_pair(first, first + c - 1)),
        Kokkos::subview(table, Kokkos::ALL(), std::int64_t(target_column)));
  }

  /// Copies n x d `features` and n `targets` of any layout, scalar type and
  /// memory space (host Views into a device Dataset, say) into new
  /// row-major Views in `MemorySpace`, converting to `Scalar`. Throws
  /// gradsum::Error when the row counts differ. Blocking.
  template <class X, class Y>
  static Dataset copy_from(const X& features, const Y& targets) {
    static_assert(Kokkos::is_view<X>::value && int(X::rank) == 2,
                  "gradsum::Dataset::copy_from: features must be a rank-2 Kokkos View (n x d)");
    static_assert(Kokkos::is_view<Y>::value && int(Y::rank) == 1,
                  "gradsum::Dataset::copy_from: targets must be a rank-1 Kokkos View (n)");
    if (features.extent(0) != targets.extent(0))
      fail("gradsum::Dataset::copy_from: features have ", features.extent(0),
                   " rows but targets have ", targets.extent(0));
    return Dataset(
        detail::copy_as_layout_right<Scalar, MemorySpace>(features, "gradsum::data::features"),
        detail::copy_as_layout_right<Scalar, MemorySpace>(targets, "gradsum::data::targets"));
  }

  /// Copies row-major host data (`features` holds n*d values) into new
  /// Views in `MemorySpace`, converting to `Scalar`.
  static Dataset from_host(std::int64_t num_samples, int num_features,
                           const std::vector<double>& features,
                           const std::vector<double>& targets) {
    if (num_samples < 0 || num_features < 0)
      fail("gradsum::Dataset::from_host: negative shape ",
                   num_samples, " x ", num_features);
    if (features.size() != std::size_t(num_samples) * std::size_t(num_features))
      fail("gradsum::Dataset::from_host: expected ",
                   num_samples * num_features, " feature values (", num_samples,
                   " x ", num_features, "), got ", features.size());
    if (targets.size() != std::size_t(num_samples))
      fail("gradsum::Dataset::from_host: expected ", num_samples,
                   " targets, got ", targets.size());
    Kokkos::View<Scalar**, Kokkos::LayoutRight, MemorySpace> x(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::data::features"), num_samples,
        num_features);
    Kokkos::View<Scalar*, MemorySpace> y(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::data::targets"), num_samples);
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
  // Checked before Kokkos converts the View, whose own check of a strided
  // View against LayoutRight or LayoutLeft aborts without naming gradsum.
  template <class X>
  static features_view checked_features(const X& x) {
    static_assert(detail::AcceptsView<X, 2, Scalar, MemorySpace>::value, "");
    static_assert(detail::AcceptsFeaturesLayout<typename X::array_layout>::value, "");
    if constexpr (std::is_same<typename X::array_layout, Kokkos::LayoutStride>::value &&
                  !strided) {
      const std::size_t n = x.extent(0), d = x.extent(1);
      const bool right = std::is_same<Layout, Kokkos::LayoutRight>::value;
      const std::size_t s0 = right ? d : 1, s1 = right ? 1 : n;
      if ((n > 1 && x.stride(0) != s0) || (d > 1 && x.stride(1) != s1))
        fail("gradsum::Dataset: features have strides (", x.stride(0), ", ", x.stride(1),
             "), not those of a ", detail::layout_name<Layout>(), " ", n, " x ", d, " View (",
             s0, ", ", s1, "): use Dataset<Scalar, Memory, Kokkos::LayoutStride>, or "
             "`gradsum::Dataset data(x, y)` to deduce it, or Dataset::from_table");
    }
    return x;
  }
  template <class Y>
  static targets_view checked_targets(const Y& y) {
    static_assert(detail::AcceptsView<Y, 1, Scalar, MemorySpace>::value, "");
    if constexpr (std::is_same<typename Y::array_layout, Kokkos::LayoutStride>::value)
      if (!strided && y.stride(0) != 1)
        fail("gradsum::Dataset: targets have stride ", y.stride(0),
             "; a ", detail::layout_name<Layout>(), " Dataset holds contiguous targets: use "
             "Dataset<Scalar, Memory, Kokkos::LayoutStride>, or `gradsum::Dataset data(x, y)` "
             "to deduce it, or Dataset::from_table");
    return y;
  }

  features_view x_;
  targets_view y_;
};

/// `gradsum::Dataset data(x, y);` holds the Views x and y as they are:
/// their scalar type and memory space, LayoutStride where either is
/// strided.
template <class X, class Y>
Dataset(const X&, const Y&) -> Dataset<typename X::non_const_value_type, typename X::memory_space,
                                       detail::deduced_layout_t<X, Y>>;

}  // namespace gradsum
