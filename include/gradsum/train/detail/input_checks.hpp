// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The step's checks of its inputs: shapes, targets and features (once
/// per data set), and, on the failure path, which sample made the loss or
/// its gradient non-finite. Each returns what is wrong, or "", so that a
/// worker's error travels to every worker instead of throwing on one.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// Finds the first row whose target the loss rejects or whose features are
/// not finite; returns n when every row is valid.
template <class Loss, class X, class Y>
struct FirstInvalidRow {
  Loss loss;
  X x;
  Y y;
  int num_outputs;

  KOKKOS_FUNCTION void operator()(std::int64_t r, std::int64_t& first) const {
    bool ok = loss.is_valid_target(y(r), num_outputs);
    for (std::size_t j = 0; j < x.extent(1); ++j) ok = ok && math::isfinite(x(r, j));
    if (!ok && r < first) first = r;
  }
};

/// Whether any of v(0 … n) is NaN or infinite. Blocking.
template <class ExecutionSpace, class View>
bool any_nonfinite(const ExecutionSpace& space, const View& v, int n) {
  int bad = 0;
  Kokkos::parallel_reduce(
      "gradsum::step::check_finite", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j, int& count) { count += math::isfinite(v(j)) ? 0 : 1; }, bad);
  return bad > 0;
}

/// The first selected sample whose loss or loss derivative is not finite.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct FirstNonFiniteSample : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    const std::int64_t r = this->rows(i);
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar dz[capacity] = {};
    const int k = this->model.num_outputs();
    this->model.forward(this->theta, &this->x(r, 0), z);
    bool ok = math::isfinite(this->loss.value(z, k, this->y(r)));
    this->loss.derivative(z, k, this->y(r), dz);
    for (int c = 0; c < k; ++c) ok = ok && math::isfinite(dz[c]);
    if (!ok && i < first) first = i;
  }
};

/// How many rows `rows` may address in `data`.
template <class Data>
std::int64_t row_limit(const Data& data, const RowRange&) {
  return data.num_samples();
}
template <class Data, class Memory>
std::int64_t row_limit(const Data&, const RowList<Memory>& rows) {
  return std::int64_t(rows.index.extent(0));
}

/// What is wrong with `theta`, `data` and `rows` for `model`, or "".
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const Rows& rows) {
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    return concat("gradsum::Step::evaluate: theta has ", theta.extent(0), " entries but model ",
                  model.name(), " has ", model.num_parameters(), " parameters");
  if (data.num_features() != model.num_features())
    return concat("gradsum::Step::evaluate: the data have ", data.num_features(),
                  " features but model ", model.name(), " expects ", model.num_features());
  if (rows.size() > 0 && (rows.begin < 0 || rows.end > std::int64_t(row_limit(data, rows))))
    return concat("gradsum::Step::evaluate: rows [", rows.begin, ", ", rows.end,
                  ") are outside the ", row_limit(data, rows), " available");
  return {};
}

/// The same for every micro-batch; several of them cannot share integer
/// bins (`bins`: the reduction sums in bins now).
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const MicroBatches<Rows>& micro, bool bins) {
  if (micro.parts.size() > 1 && bins)
    return "gradsum::Step::evaluate: gradient accumulation (MicroBatches) does not work with "
           "the Reproducible reduction; use accumulate = 1 or the Sum reduction";
  for (const auto& part : micro.parts) {
    const std::string error = check_shapes(model, theta, data, part);
    if (!error.empty()) return error;
  }
  return check_shapes(model, theta, data, RowRange{});
}
template <class Model, class Theta, class Data, class Rows>
std::string check_shapes(const Model& model, const Theta& theta, const Data& data,
                         const Rows& rows, bool) {
  return check_shapes(model, theta, data, rows);
}

/// A median or trimmed mean over W virtual workers (VirtualWorkers) counts
/// every worker's gradient as a vote: rows split into fewer than W
/// non-empty parts leave workers whose zero gradients would outvote the
/// rest (training could stall at zero, silently). What is wrong, or "".
template <class Gradient, class Rows>
std::string check_worker_rows(const Gradient& gradient, const Rows& rows) {
  if constexpr (has_robust<Gradient>::value) {
    if (gradient.robust() && gradient.rule.counts_votes() && rows.size() < gradient.workers)
      return concat("gradsum::VirtualWorkers: a ", gradient.rule.name(), " over ",
                    gradient.workers, " workers got a mini-batch of ", rows.size(),
                    " rows on this rank, leaving ", gradient.workers - rows.size(),
                    " workers without rows whose zero gradients would outvote the others; use "
                    "mini-batches of at least ", gradient.workers,
                    " rows on every rank, or fewer workers");
  }
  return {};
}
template <class Gradient, class Rows>
std::string check_worker_rows(const Gradient& gradient, const MicroBatches<Rows>& micro) {
  for (const auto& part : micro.parts) {
    const std::string error = check_worker_rows(gradient, part);
    if (!error.empty()) return error;
  }
  return {};
}

/// ": feature j is v" for row `row`'s first non-finite feature, else
/// ": target is y".
template <class Data>
std::string describe_row(const Data& data, std::int64_t row) {
  auto y = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(data.targets(), Kokkos::make_pair(row, row + 1)));
  auto x = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(data.features(), row, Kokkos::ALL()));
  for (std::size_t j = 0; j < x.extent(0); ++j)
    if (!std::isfinite(double(x(j)))) return concat(": feature ", j, " is ", double(x(j)));
  return concat(": target is ", double(y(0)));
}

/// Checks targets and features once per data set (identified by its
/// Views): the first row the loss rejects, or with a non-finite feature.
class DataCheck {
 public:
  template <class Space, class Model, class Loss, class Data>
  std::string operator()(const Space& space, const Model& model, const Loss& loss,
                         const Data& data) {
    const void* id = data.targets().data();
    if (id == checked_ && data.num_samples() == rows_) return {};
    const std::int64_t n = data.num_samples();
    std::int64_t first = n;
    using Functor =
        FirstInvalidRow<Loss, typename Data::features_view, typename Data::targets_view>;
    Kokkos::parallel_reduce(
        "gradsum::step::check_data",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, n),
        Functor{loss, data.features(), data.targets(), model.num_outputs()},
        Kokkos::Min<std::int64_t>(first));
    if (first < n)
      return concat("gradsum::Step::evaluate: row ", first, " of the data has a target the loss ",
                    loss.name(), " rejects for ", model.num_outputs(),
                    " output(s), or a non-finite feature", describe_row(data, first));
    checked_ = id;
    rows_ = n;
    return {};
  }

 private:
  const void* checked_ = nullptr;
  std::int64_t rows_ = -1;
};

/// On the failure path only: the first selected row whose loss or loss
/// derivative is not finite at theta.
template <class Scalar, class Space, class Model, class Loss, class Theta, class Data, class Rows>
std::string describe_nonfinite(const Space& space, const Model& model, const Loss& loss,
                               const Theta& theta, const Data& data, const Rows& rows) {
  if (!per_sample_limits(model).empty())  // no sample can be looked at on its own
    return "gradsum::Step::evaluate: the loss or its gradient is not finite (a network beyond "
           "the per-sample limits: no single sample is named)";
  std::int64_t first = INT64_MAX;
  using Functor = FirstNonFiniteSample<Model, Loss, Scalar, typename Data::features_view,
                                       typename Data::targets_view, Rows>;
  Kokkos::parallel_reduce(
      "gradsum::step::find_nonfinite",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows.size()),
      Functor{{model, loss, theta.data(), data.features(), data.targets(), rows}},
      Kokkos::Min<std::int64_t>(first));
  if (first == INT64_MAX)
    return "gradsum::Step::evaluate: the summed gradient is not finite (it overflowed; no "
           "single sample is)";
  return concat("gradsum::Step::evaluate: the loss or its gradient is not finite for sample ",
                first, " of the selected rows (its features and target are finite: the "
                "parameters or the model's outputs overflow)");
}
template <class Scalar, class Space, class Model, class Loss, class Theta, class Data, class Rows>
std::string describe_nonfinite(const Space& space, const Model& model, const Loss& loss,
                               const Theta& theta, const Data& data,
                               const MicroBatches<Rows>& micro) {
  std::string message;
  for (std::size_t k = 0; k < micro.parts.size(); ++k) {
    message = describe_nonfinite<Scalar>(space, model, loss, theta, data, micro.parts[k]);
    if (message.find(" for sample ") != std::string::npos)
      return concat(message, " (in micro-batch ", k, ")");
  }
  return message;
}

}  // namespace detail
}  // namespace gradsum
