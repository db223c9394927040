// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Suspect rows: the training rows whose target looks wrong, ranked by the
/// margin averaged over training (Pleiss et al. 2020, "Identifying
/// Mislabeled Data using the Area Under the Margin Ranking").

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/train/callbacks.hpp>
#include <gradsum/train/detail/model_outputs.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace gradsum {

/// One suspect row: its index in the data, its given target, the model's
/// prediction (a class for a classifier, else the output) and its score
/// (larger: more suspicious).
struct Suspect {
  std::int64_t row = 0;
  double target = 0;
  double predicted = 0;
  double score = 0;
};

namespace detail {

/// The margin of output z for target y: for a classifier, the logit of
/// the given class minus the largest other one (one logit: (2y - 1) z, the
/// logit of class 1 against 0); for a regression, minus the loss.
template <class Loss, class Scalar>
KOKKOS_FUNCTION double margin(const Loss& loss, const Scalar* z, int k, Scalar y) {
  if constexpr (is_classifier_loss_v<Loss, Scalar>) {
    if (k == 1) return double(y > Scalar(0.5) ? z[0] : -z[0]);
    const int given = int(y);
    double other = -1e308;
    for (int c = 0; c < k; ++c)
      if (c != given && double(z[c]) > other) other = double(z[c]);
    return double(z[given]) - other;
  } else {
    return -double(loss.value(z, k, y));
  }
}

/// The prediction for output z: the loss's class for a classifier, else
/// the output itself. (A function, not a branch inside the kernel's
/// lambda: nvcc refuses a lambda whose first capture is in an if constexpr.)
template <class Loss, class Scalar>
KOKKOS_FUNCTION double predicted_value(const Loss& loss, const Scalar* z, int k) {
  if constexpr (is_classifier_loss_v<Loss, Scalar>) {
    return double(loss.predict_class(z, k));
  } else {
    (void)loss;
    (void)k;
    return double(z[0]);
  }
}

/// Most suspicious first; equal scores by row, so every ordering agrees.
inline bool more_suspect(const Suspect& a, const Suspect& b) {
  return a.score != b.score ? a.score > b.score : a.row < b.row;
}

/// The k most suspicious of `all` (which it reorders), most suspicious first.
inline std::vector<Suspect> top_suspects(std::vector<Suspect> all, std::int64_t k) {
  const auto n = std::min<std::size_t>(all.size(), std::size_t(k));
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(n), all.end(), more_suspect);
  all.resize(n);
  return all;
}

/// Refuses k < 1 or k beyond the `rows` to rank, naming `who`.
inline void check_count(const char* who, std::int64_t k, std::int64_t rows, const char* where) {
  if (k < 1) fail(who, ": k (suspects wanted) must be >= 1, got ", k);
  if (k > rows)
    fail(who, ": k (suspects wanted) is ", k, " but ", where, " hold", 
                          rows == 1 ? "s " : " ", rows, " row", rows == 1 ? "" : "s",
                          "; ask for at most ", rows);
}

}  // namespace detail

/// The margin of every row in `rows` of `data`, summed over the times
/// record() ran: as a fit() callback, after every epoch, at the
/// parameters of that moment. A mislabeled row keeps a low (negative)
/// margin while the model learns the clean rows and reaches a high one,
/// if ever, only once it memorizes it; averaging over training tells the
/// two apart where the margin at the end cannot (a network that fits
/// every label). Holds one double per row; no gradient is stored.
///
/// `theta` is held by reference (a View shares its data): record() reads
/// the values the training has at that moment. The model, loss, data and
/// theta must outlive the history.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
class MarginHistory : public Callback {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename Data::memory_space;
  using scalar_type = typename Data::scalar_type;

  /// Tracks the rows `rows` of `data` (under MPI: this rank's part).
  /// Throws gradsum::Error when `rows` is not within the data or the data
  /// or theta do not fit the model.
  MarginHistory(const ExecutionSpace& space, const Model& model, const Loss& loss,
                const Theta& theta, const Data& data, RowRange rows)
      : space_(space), model_(model), loss_(loss), theta_(theta), data_(data), rows_(rows) {
    static_assert(is_loss_v<Loss, scalar_type>,
                  "gradsum::MarginHistory: the Loss must provide name(), "
                  "supports_outputs(k), is_valid_target(y, k), value(z, k, y) and "
                  "derivative(z, k, y, dz)");
    const char* who = "gradsum::MarginHistory";
    if (rows.begin < 0 || rows.end < rows.begin || rows.end > data.num_samples())
      fail(who, ": rows [", rows.begin, ", ", rows.end,
                            ") are not within the data's ", data.num_samples(), " rows");
    gradsum::detail::check_features(who, model, theta, data.features());
    sums_ = Kokkos::View<double*, memory_space>("gradsum::diagnostics::margin_sums",
                                                std::size_t(rows.size()));
  }

  /// Adds every tracked row's margin at the current parameters. Blocking;
  /// local to this process.
  void record() {
    using Scalar = scalar_type;
    const auto x = Kokkos::subview(data_.features(),
                                   Kokkos::pair<std::int64_t, std::int64_t>(rows_.begin, rows_.end),
                                   Kokkos::ALL());
    const auto y = data_.targets();
    const auto sums = sums_;
    const auto loss = loss_;
    const std::int64_t first = rows_.begin;
    const int k = model_.num_outputs();
    gradsum::detail::reduce_outputs<int>(
        space_, model_, theta_, x,
        KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, int&) {
          sums(r) += detail::margin(loss, z, k, y(first + r));
        },
        "gradsum::MarginHistory", "gradsum::diagnostics::record_margins");
    ++records_;
  }

  /// The fit() callback: records after every epoch.
  void on_epoch(FitState&) override { record(); }

  /// How many times the margins were recorded.
  std::int64_t records() const { return records_; }
  /// The rows tracked.
  RowRange rows() const { return rows_; }

  /// Every tracked row as a Suspect (score: minus its averaged margin,
  /// prediction at the current parameters), in row order. Throws
  /// gradsum::Error when nothing was recorded yet. Blocking; local.
  std::vector<Suspect> scores() const {
    using Scalar = scalar_type;
    if (records_ == 0)
      fail("gradsum::suspect_rows: no margins recorded yet: "
                            "pass the MarginHistory to fit() as a callback or call record()");
    const std::int64_t n = rows_.size();
    Kokkos::View<double* [2], memory_space> out("gradsum::diagnostics::predictions",
                                                std::size_t(n));
    const auto x = Kokkos::subview(data_.features(),
                                   Kokkos::pair<std::int64_t, std::int64_t>(rows_.begin, rows_.end),
                                   Kokkos::ALL());
    const auto y = data_.targets();
    const auto loss = loss_;
    const std::int64_t first = rows_.begin;
    const int k = model_.num_outputs();
    gradsum::detail::reduce_outputs<int>(
        space_, model_, theta_, x,
        KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, int&) {
          out(r, 0) = detail::predicted_value(loss, z, k);
          out(r, 1) = double(y(first + r));
        },
        "gradsum::suspect_rows", "gradsum::diagnostics::predict");
    const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    const auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums_);
    std::vector<Suspect> all(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r)
      all[std::size_t(r)] = Suspect{first + r, p(r, 1), p(r, 0), -s(r) / double(records_)};
    return all;
  }

 private:
  ExecutionSpace space_;
  Model model_;
  Loss loss_;
  Theta theta_;
  Data data_;
  RowRange rows_;
  Kokkos::View<double*, memory_space> sums_;
  std::int64_t records_ = 0;
};

/// A MarginHistory of `rows` of `data` (default: all of them).
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
MarginHistory<ExecutionSpace, Model, Loss, Theta, Data> margin_history(
    const ExecutionSpace& space, const Model& model, const Loss& loss, const Theta& theta,
    const Data& data, RowRange rows) {
  return {space, model, loss, theta, data, rows};
}
/// margin_history() of every row.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
MarginHistory<ExecutionSpace, Model, Loss, Theta, Data> margin_history(
    const ExecutionSpace& space, const Model& model, const Loss& loss, const Theta& theta,
    const Data& data) {
  return {space, model, loss, theta, data, data.all_rows()};
}

/// The `k` rows of `history` with the most evidence of a wrong target,
/// most suspicious first: the lowest margin averaged over the records
/// (score = minus that average); equal scores in row order. Throws
/// gradsum::Error unless 1 <= k <= the rows tracked, or when nothing was
/// recorded. Blocking; local to this process (mpi::suspect_rows merges
/// the ranks).
template <class History>
std::vector<Suspect> suspect_rows(const History& history, std::int64_t k) {
  detail::check_count("gradsum::suspect_rows", k, history.rows().size(),
                      "the tracked rows");
  return detail::top_suspects(history.scores(), k);
}

}  // namespace gradsum
