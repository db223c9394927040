// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/central_difference.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/train/step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {

/// Relative distance ||a - b|| / (||a|| + ||b||) of two gradient vectors
/// (0 when both are zero). Blocking.
template <class ViewA, class ViewB>
double relative_error(const ViewA& a, const ViewB& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  if (ha.extent(0) != hb.extent(0))
    detail::fail("gradsum::relative_error: lengths differ (", ha.extent(0),
                 " vs ", hb.extent(0), ")");
  double diff = 0, na = 0, nb = 0;
  for (std::size_t j = 0; j < ha.extent(0); ++j) {
    const double x = double(ha(j)), y = double(hb(j));
    diff += (x - y) * (x - y);
    na += x * x;
    nb += y * y;
  }
  const double denom = std::sqrt(na) + std::sqrt(nb);
  return denom == 0 ? 0.0 : std::sqrt(diff) / denom;
}

/// Compares the gradients two steps compute at the same `theta` on the same
/// rows and returns their relative error ||a - b|| / (||a|| + ||b||).
/// Typically the steps differ only in their Gradient policy (Analytic vs
/// CentralDifference). Blocking; collective when the steps are.
template <class StepA, class StepB, class Theta, class Data, class Rows>
double gradient_check(StepA& a, StepB& b, const Theta& theta, const Data& data,
                      const Rows& rows) {
  a.evaluate(theta, data, rows);
  b.evaluate(theta, data, rows);
  return relative_error(a.gradient(), b.gradient());
}

/// Checks the model's analytic gradient of the objective against two-sided
/// finite differences with step `fd.eps`, over every row of `data`.
/// Costs 2P + 2 passes over the data. Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
double gradient_check(const ExecutionSpace& space, const Model& model,
                      const Loss& loss, const Theta& theta, const Data& data,
                      const CentralDifference& fd = {},
                      const Objective& objective = {}) {
  using Scalar = typename Data::scalar_type;
  auto analytic = make_step<Scalar>(space, model, loss, SGD{}, objective);
  auto numeric = make_step<Scalar>(space, model, loss, SGD{}, objective, fd);
  return gradient_check(analytic, numeric, theta, data, data.all_rows());
}

/// What gradient_check_sampled() found.
struct SampledCheck {
  /// ||a - n|| / (||a|| + ||n||) over the checked coordinates, a the
  /// analytic and n the central-difference partial derivatives.
  double relative_error = 0;
  std::vector<int> coordinates;  ///< the parameters checked, ascending
  std::int64_t samples = 0;      ///< rows of the subset
};

/// gradient_check on a seeded random subset: `num_samples` distinct rows and
/// `num_coordinates` distinct parameters, so that it stays usable on large
/// data and models. The objective (same l2, mean over the subset) and its
/// analytic gradient are evaluated on the subset once; each chosen
/// coordinate j is then checked by (J(theta + h e_j) - J(theta - h e_j)) / 2h
/// on the same rows, h = fd.eps.
///
/// Cost: 2 num_coordinates + 1 passes over num_samples rows (the full check
/// costs 2P + 2 passes over all n), plus O(n + P) host work to draw the
/// subsets. Blocking. Throws gradsum::Error when a count is not in
/// [1, n] or [1, P].
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
SampledCheck gradient_check_sampled(const ExecutionSpace& space, const Model& model,
                                    const Loss& loss, const Theta& theta, const Data& data,
                                    std::int64_t num_samples, int num_coordinates,
                                    std::uint64_t seed = 0, const CentralDifference& fd = {},
                                    const Objective& objective = {}) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t n = data.num_samples();
  const int P = model.num_parameters();
  if (num_samples < 1 || num_samples > n)
    detail::fail("gradsum::gradient_check_sampled: num_samples must be in [1, ", n,
                 "] (the rows of the data), got ", num_samples);
  if (num_coordinates < 1 || num_coordinates > P)
    detail::fail("gradsum::gradient_check_sampled: num_coordinates must be in [1, ", P,
                 "] (the model's parameters), got ", num_coordinates);
  fd.validate();
  // The first k of a seeded Fisher-Yates shuffle: k distinct draws.
  auto draw = [](std::int64_t count, std::int64_t k, std::uint64_t s) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) order[std::size_t(i)] = i;
    detail::SplitMix64 rng(s);
    for (std::int64_t i = 0; i < k; ++i)
      std::swap(order[std::size_t(i)],
                order[std::size_t(i + std::int64_t(rng.below(std::uint64_t(count - i))))]);
    order.resize(std::size_t(k));
    std::sort(order.begin(), order.end());
    return order;
  };
  const auto rows = draw(n, num_samples, seed ^ 0x452821e638d01377ULL);
  const auto coordinates = draw(P, num_coordinates, seed ^ 0xbe5466cf34e90c6cULL);
  Kokkos::View<std::int64_t*, Memory> index("gradsum::gradient_check::rows", rows.size());
  auto host_index = Kokkos::create_mirror_view(index);
  for (std::size_t i = 0; i < rows.size(); ++i) host_index(i) = rows[i];
  Kokkos::deep_copy(index, host_index);
  const RowList<Memory> subset{index, 0, num_samples};

  auto step = make_step<Scalar>(space, model, loss, SGD{}, objective);
  step.evaluate(theta, data, subset);
  // A copy, not a mirror: on host spaces a mirror would be step.gradient()
  // itself, overwritten by the evaluations below.
  std::vector<double> analytic(static_cast<std::size_t>(P));
  {
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
    for (int j = 0; j < P; ++j) analytic[std::size_t(j)] = double(g(j));
  }
  auto point = step.make_parameters();
  Kokkos::deep_copy(point, theta);
  auto host_point = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), point);
  SampledCheck out;
  out.samples = num_samples;
  double diff = 0, na = 0, nn = 0;
  for (std::int64_t j : coordinates) {
    const Scalar original = host_point(j);
    auto objective_at = [&](Scalar value) {
      host_point(j) = value;
      Kokkos::deep_copy(point, host_point);
      return step.evaluate(point, data, subset).loss;
    };
    const Scalar h = Scalar(fd.eps);
    const double numeric = (objective_at(original + h) - objective_at(original - h)) / (2 * double(h));
    host_point(j) = original;
    const double a = analytic[std::size_t(j)];
    diff += (a - numeric) * (a - numeric);
    na += a * a;
    nn += numeric * numeric;
    out.coordinates.push_back(int(j));
  }
  Kokkos::deep_copy(point, host_point);
  const double denominator = std::sqrt(na) + std::sqrt(nn);
  out.relative_error = denominator == 0 ? 0.0 : std::sqrt(diff) / denominator;
  return out;
}

}  // namespace gradsum
