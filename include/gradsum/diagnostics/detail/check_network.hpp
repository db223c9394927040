// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// check_model() for a network of layers (Network, model/network.hpp),
/// which has no per-sample forward: the checks run through a step
/// (diagnostics/check_model.hpp documents them).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/diagnostics/gradient_check.hpp>
#include <gradsum/diagnostics/gradient_report.hpp>
#include <gradsum/optimizer/sgd.hpp>
#include <gradsum/train/objective.hpp>
#include <gradsum/train/step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gradsum {
namespace detail {

/// The gradient of `step`'s last evaluation, as doubles on the host (a
/// copy: on host spaces a mirror would be the step's own buffer).
template <class StepType>
std::vector<double> gradient_copy(const StepType& step) {
  const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
  return std::vector<double>(g.data(), g.data() + g.extent(0));
}

/// Where the gradient of R rows in panels of one row (`panelled`) differs
/// from their gradient in one panel (`whole`) by more than rounding: a
/// layer whose backward assigns into g lost the earlier panels. "" when
/// they agree.
template <class Scalar>
std::string panels_failure(const std::vector<double>& whole, const std::vector<double>& panelled,
                           std::int64_t R, const std::string& drawn) {
  double largest = 0;
  for (const double a : whole) largest = std::max(largest, std::fabs(a));
  const double eps = std::numeric_limits<Scalar>::epsilon();
  for (std::size_t j = 0; j < whole.size(); ++j) {
    const double a = whole[j], b = panelled[j];
    if (std::fabs(a - b) <= 1e3 * eps * (std::fabs(a) + std::fabs(b) + largest)) continue;
    return concat("a layer's backward does not add into g: over ", R, " rows in ", R,
                  " panels the gradient's parameter ", j, " is ", short_number(b),
                  ", in one panel ", short_number(a), drawn,
                  " (each panel's backward must add to what the earlier ones left in g)");
  }
  return {};
}

/// check_model for a network of layers (Network), which has no per-sample
/// forward: through a step, at each point, the gradient of the mean loss
/// over `rows` against central differences of that mean, and the gradient
/// of the same rows in panels of one row each against the one-panel
/// gradient (a layer whose backward assigns into g instead of adding loses
/// the earlier panels).
template <class Scalar, class ExecutionSpace, class Model, class Loss, class Data, class Options>
GradientReport check_network(const ExecutionSpace& space, const Model& model, const Loss& loss,
                             const Data& data, const std::vector<std::int64_t>& rows,
                             const Options& options) {
  using Memory = typename ExecutionSpace::memory_space;
  using Tolerance = GradientTolerance<Scalar>;
  const int P = model.num_parameters();
  const auto R = std::int64_t(rows.size());
  const Objective objective{0, true, NonFinite::skip};
  Model one_panel = model, panel_per_row = model;
  one_panel.panel_tokens = std::max<std::int64_t>(model.panel_tokens, R * model.positions_per_row());
  panel_per_row.panel_tokens = model.positions_per_row();
  auto step = make_step<Scalar>(space, one_panel, loss, SGD{}, objective);
  auto per_row = make_step<Scalar>(space, panel_per_row, loss, SGD{}, objective);
  Kokkos::View<std::int64_t*, Memory> index("gradsum::check_model::rows", std::size_t(R));
  auto host_index = Kokkos::create_mirror_view(index);
  for (std::int64_t r = 0; r < R; ++r) host_index(r) = rows[std::size_t(r)];
  Kokkos::deep_copy(index, host_index);
  const RowList<Memory> subset{index, 0, R};

  GradientReport report;
  report.samples = R;
  report.coordinates = spread_coordinates(
      P, P <= options.max_full ? P : std::min(P, options.sampled), options.seed);
  GradientJudge judge(options.tolerance > 0 ? options.tolerance : Tolerance::tolerance,
                      Tolerance::floor);
  auto fail_with = [&](const std::string& sentence) {
    judge.finish(report);
    report.passed = false;
    report.diagnosis = sentence;
    return report;
  };
  const double relative_step = options.step > 0 ? options.step : Tolerance::step;
  SplitMix64 rng(options.seed ^ 0x13198a2e03707344ULL);
  auto point = step.make_parameters();
  auto host_point = Kokkos::create_mirror_view(point);
  for (int p = 0; p < options.points; ++p) {
    const std::string at = options.points > 1 ? concat(" (point ", p, ")") : std::string();
    for (int j = 0; j < P; ++j) host_point(j) = Scalar(uniform_in(rng, options.theta_scale));
    Kokkos::deep_copy(point, host_point);
    const std::string drawn = concat(" with theta drawn from [-", options.theta_scale, ", ",
                                     options.theta_scale, "]", at);
    if (step.evaluate(point, data, subset).skipped) {
      report.finite = false;
      return fail_with(concat("the loss or its gradient is not finite", drawn));
    }
    const std::vector<double> whole = gradient_copy(step);
    if (per_row.evaluate(point, data, subset).skipped) {
      report.finite = false;
      return fail_with(concat("the loss or its gradient is not finite in panels of one row",
                              drawn));
    }
    const std::string failure = panels_failure<Scalar>(whole, gradient_copy(per_row), R, drawn);
    if (!failure.empty()) {
      report.accumulates = false;
      return fail_with(failure);
    }
    std::vector<double> analytic;
    for (const int j : report.coordinates) analytic.push_back(whole[std::size_t(j)]);
    judge.add_point(analytic,
                    step_central_differences(step, point, host_point, data, subset,
                                             report.coordinates,
                                             [&](double t) {
                                               return relative_step * std::max(1.0, std::fabs(t));
                                             }),
                    report.coordinates, p);
  }
  judge.finish(report);
  return report;
}

}  // namespace detail
}  // namespace gradsum
