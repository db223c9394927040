// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/central_difference.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/diagnostics/gradient_report.hpp>
#include <gradsum/train/step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {
namespace detail {

/// Central differences of `step`'s objective over `rows` at `point` (whose
/// host copy is `host_point`) for each coordinate j of `coordinates`, with
/// step h_of(theta_j), each divided by the distance of the two points as
/// stored (for float, theta_j +- h rounds); `point` is theta again after.
/// Blocking; collective when the step is.
template <class StepType, class Point, class HostPoint, class Data, class Rows, class Step>
std::vector<double> step_central_differences(StepType& step, const Point& point,
                                             const HostPoint& host_point, const Data& data,
                                             const Rows& rows, const std::vector<int>& coordinates,
                                             const Step& h_of) {
  using Scalar = typename StepType::scalar_type;
  std::vector<double> numeric;
  for (const int j : coordinates) {
    const Scalar t = host_point(j);
    const Scalar h = Scalar(h_of(double(t)));
    const Scalar up = t + h, down = t - h;
    auto loss_at = [&](Scalar value) {
      host_point(j) = value;
      Kokkos::deep_copy(point, host_point);
      return step.evaluate(point, data, rows).loss;
    };
    const double rise = loss_at(up) - loss_at(down);
    host_point(j) = t;
    numeric.push_back(rise / (double(up) - double(down)));
  }
  Kokkos::deep_copy(point, host_point);
  return numeric;
}

}  // namespace detail

/// Relative distance ||a - b|| / (||a|| + ||b||) of two gradient vectors
/// (0 when both are zero). Blocking.
template <class ViewA, class ViewB>
double relative_error(const ViewA& a, const ViewB& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  if (ha.extent(0) != hb.extent(0))
    fail("gradsum::relative_error: lengths differ (", ha.extent(0),
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
/// rows, coordinate by coordinate (the first step's as "analytic", the
/// second's as "numeric"), against GradientTolerance<Scalar> of the steps'
/// scalar type; `relative_error` holds ||a - b|| / (||a|| + ||b||).
/// Typically the steps differ only in their Gradient policy (Analytic vs
/// CentralDifference). Blocking; collective when the steps are.
template <class StepA, class StepB, class Theta, class Data, class Rows>
GradientReport gradient_check(StepA& a, StepB& b, const Theta& theta, const Data& data,
                              const Rows& rows) {
  using Tolerance = GradientTolerance<typename StepA::scalar_type>;
  const auto first = a.evaluate(theta, data, rows);
  b.evaluate(theta, data, rows);
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.gradient());
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.gradient());
  // Both steps took the same theta, so both have theta's length.
  GradientReport report;
  report.samples = first.count;
  std::vector<double> va(ha.extent(0)), vb(ha.extent(0));
  for (std::size_t j = 0; j < ha.extent(0); ++j) {
    va[j] = double(ha(j));
    vb[j] = double(hb(j));
    report.coordinates.push_back(int(j));
  }
  detail::GradientJudge judge(Tolerance::tolerance, Tolerance::floor);
  judge.add_point(va, vb, report.coordinates, 0);
  judge.finish(report);
  return report;
}

/// Checks the model's analytic gradient of the objective against two-sided
/// finite differences with step `fd.eps`, over every row of `data`, on every
/// coordinate; see the two-step overload for the report. The thresholds
/// (GradientTolerance) assume an `fd.eps` suited to the scalar type: about
/// 1e-5 for double, 1e-2 for float. Costs 2P + 2 passes over the data.
/// Blocking.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
GradientReport gradient_check(const ExecutionSpace& space, const Model& model, const Loss& loss,
                              const Theta& theta, const Data& data,
                              const CentralDifference& fd = {}, const Objective& objective = {}) {
  using Scalar = typename Data::scalar_type;
  auto analytic = make_step<Scalar>(space, model, loss, SGD{}, objective);
  auto numeric = make_step<Scalar>(space, model, loss, SGD{}, objective, fd);
  return gradient_check(analytic, numeric, theta, data, data.all_rows());
}

/// gradient_check on a seeded subset: `num_samples` distinct random rows
/// and `num_coordinates` distinct parameters, so that it stays usable on
/// large data and models. The coordinates always include the last ones
/// (where biases and output layers sit), the first, an even spread over
/// the whole range, and random ones (all of them when num_coordinates is
/// P). The objective (same l2, mean over the subset) and its analytic
/// gradient are evaluated on the subset once; each chosen coordinate j is
/// then checked by (J(theta + h e_j) - J(theta - h e_j)) / 2h on the same
/// rows, h = fd.eps, and judged on its own (GradientTolerance): a single
/// wrong partial fails the check.
///
/// Cost: 2 num_coordinates + 1 passes over num_samples rows (the full check
/// costs 2P + 2 passes over all n), plus O(n + P) host work to draw the
/// subsets. Blocking. Throws gradsum::Error when a count is not in
/// [1, n] or [1, P].
template <class ExecutionSpace, class Model, class Loss, class Theta, class Data>
GradientReport gradient_check_sampled(const ExecutionSpace& space, const Model& model,
                                      const Loss& loss, const Theta& theta, const Data& data,
                                      std::int64_t num_samples, int num_coordinates,
                                      std::uint64_t seed = 0, const CentralDifference& fd = {},
                                      const Objective& objective = {}) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename ExecutionSpace::memory_space;
  const std::int64_t n = data.num_samples();
  const int P = model.num_parameters();
  if (num_samples < 1 || num_samples > n)
    fail("gradsum::gradient_check_sampled: num_samples must be in [1, ", n,
                 "] (the rows of the data), got ", num_samples);
  if (num_coordinates < 1 || num_coordinates > P)
    fail("gradsum::gradient_check_sampled: num_coordinates must be in [1, ", P,
                 "] (the model's parameters), got ", num_coordinates);
  fd.validate();
  auto rows = detail::draw_rows(n, num_samples, seed);
  std::sort(rows.begin(), rows.end());
  GradientReport out;
  out.coordinates = detail::spread_coordinates(P, num_coordinates, seed);
  out.samples = num_samples;
  Kokkos::View<std::int64_t*, Memory> index("gradsum::gradient_check::rows", rows.size());
  auto host_index = Kokkos::create_mirror_view(index);
  for (std::size_t i = 0; i < rows.size(); ++i) host_index(i) = rows[i];
  Kokkos::deep_copy(index, host_index);
  const RowList<Memory> subset{index, 0, num_samples};

  auto step = make_step<Scalar>(space, model, loss, SGD{}, objective);
  step.evaluate(theta, data, subset);
  // A copy, not a mirror: on host spaces a mirror would be step.gradient()
  // itself, overwritten by the evaluations below.
  std::vector<double> analytic, numeric;
  {
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
    for (int j : out.coordinates) analytic.push_back(double(g(j)));
  }
  auto point = step.make_parameters();
  Kokkos::deep_copy(point, theta);
  auto host_point = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), point);
  numeric = detail::step_central_differences(step, point, host_point, data, subset,
                                             out.coordinates,
                                             [&](double) { return fd.eps; });
  using Tolerance = GradientTolerance<Scalar>;
  detail::GradientJudge judge(Tolerance::tolerance, Tolerance::floor);
  judge.add_point(analytic, numeric, out.coordinates, 0);
  judge.finish(out);
  return out;
}

}  // namespace gradsum
