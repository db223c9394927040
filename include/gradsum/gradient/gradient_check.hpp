// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/central_difference.hpp>
#include <gradsum/train/step.hpp>

#include <cmath>

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

}  // namespace gradsum
