// SPDX-License-Identifier: Apache-2.0
// rmse, r2_score and regression_scores (train/metrics.hpp) against values
// worked out by hand: a line through four points at the least-squares fit
// and at other parameters, the mean predictor (R^2 = 0 exactly), the same
// fit shifted by 1e8 (R^2 unchanged: the scores must not lose its digits),
// constant targets (R^2 undefined), float data, and an MLP against the
// identity rmse = sqrt(2 mean squared loss); and the refusals, by name.

#include "test_helpers.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace {

// x = 0, 1, 2, 3 and y = 1, 3, 2, 5 (mean 2.75, sum of squared deviations
// 8.75), plus `shift` on every target.
template <class Space, class Scalar = double>
DataOn<Space, Scalar> four_points(double shift = 0) {
  return DataOn<Space, Scalar>::from_host(4, 1, {0, 1, 2, 3},
                                          {1 + shift, 3 + shift, 2 + shift, 5 + shift});
}

template <class Space, class Scalar = double>
Kokkos::View<Scalar*, typename Space::memory_space> line(double w, double b) {
  Kokkos::View<Scalar*, typename Space::memory_space> theta("theta", 2);
  fill(theta, {w, b});
  return theta;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("rmse and R^2 of a line through four points, worked by hand", Space,
                          regression_scores) {
  const Space space;
  const gradsum::Linear model(1);
  const auto data = four_points<Space>();
  // Least squares: w = S_xy / S_xx = 5.5 / 5 = 1.1, b = 2.75 - 1.1 * 1.5 = 1.1;
  // residuals -0.1, 0.8, -1.3, 0.6 sum to 2.7 squared: R^2 = 1 - 2.7 / 8.75.
  auto s = gradsum::regression_scores(space, model, line<Space>(1.1, 1.1), data);
  CHECK(s.rows == 4);
  CHECK(s.rmse == doctest::Approx(std::sqrt(2.7 / 4)).epsilon(1e-14));
  CHECK(s.r2 == doctest::Approx(1 - 2.7 / 8.75).epsilon(1e-14));
  // w = b = 1: residuals 0, -1, 1, -1 (exact): RMSE sqrt(3/4), R^2 = 1 - 3 / 8.75.
  s = gradsum::regression_scores(space, model, line<Space>(1, 1), data);
  CHECK(s.rmse == std::sqrt(0.75));
  CHECK(s.r2 == doctest::Approx(1 - 3 / 8.75).epsilon(1e-15));
  CHECK(gradsum::rmse(space, model, line<Space>(1, 1), data) == s.rmse);
  CHECK(gradsum::r2_score(space, model, line<Space>(1, 1), data) == s.r2);
  // Predicting the mean: R^2 is 0, RMSE the targets' standard deviation.
  s = gradsum::regression_scores(space, model, line<Space>(0, 2.75), data);
  CHECK(s.r2 == 0);
  CHECK(s.rmse == std::sqrt(8.75 / 4));
  // Targets and intercept 1e8 larger: the same residuals and deviations.
  s = gradsum::regression_scores(space, model, line<Space>(1, 1 + 1e8), four_points<Space>(1e8));
  CHECK(s.rmse == std::sqrt(0.75));
  CHECK(s.r2 == doctest::Approx(1 - 3 / 8.75).epsilon(1e-15));
  // Every target the same: R^2 undefined (NaN), RMSE still defined.
  const auto flat = DataOn<Space>::from_host(3, 1, {0, 1, 2}, {4, 4, 4});
  s = gradsum::regression_scores(space, model, line<Space>(1, 4), flat);
  CHECK(std::isnan(s.r2));
  CHECK(s.rmse == std::sqrt(5.0 / 3));
  // Float data and parameters, scored in double.
  s = gradsum::regression_scores(space, model, line<Space, float>(1, 1), four_points<Space, float>());
  CHECK(s.rmse == std::sqrt(0.75));
  CHECK(s.r2 == doctest::Approx(1 - 3 / 8.75).epsilon(1e-15));
}
TEST_CASE_TEMPLATE_APPLY(regression_scores, Spaces);

TEST_CASE_TEMPLATE_DEFINE("rmse of an MLP is sqrt(2 mean squared loss)", Space, regression_mlp) {
  const Space space;
  const auto p = random_problem(37, 5, Kind::regression, 0, 31);
  const auto data = DataOn<Space>::from_host(p.n, p.d, p.x, p.y);
  const gradsum::MLP net(5, {7}, 1, gradsum::Activation::tanh);
  Kokkos::View<double*, typename Space::memory_space> theta("theta", net.num_parameters());
  fill(theta, random_vector(std::size_t(net.num_parameters()), 8));
  const double loss = gradsum::mean_loss(space, net, gradsum::SquaredError{}, theta, data);
  CHECK(gradsum::rmse(space, net, theta, data) == doctest::Approx(std::sqrt(2 * loss)).epsilon(1e-14));
}
TEST_CASE_TEMPLATE_APPLY(regression_mlp, Spaces);

TEST_CASE("rmse and R^2 refuse what they cannot score, by name") {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  const auto data = four_points<Space>();
  Kokkos::View<double*, Space::memory_space> theta("theta", 6);
  CHECK_THROWS_WITH_AS(gradsum::regression_scores(space, gradsum::Softmax(1, 3), theta, data),
                       "gradsum::regression_scores: model softmax has 3 outputs; RMSE and R^2 "
                       "compare one output with the target",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::rmse(space, gradsum::Linear(1), theta, data),
                       "gradsum::regression_scores: theta has 6 entries but model linear has 2 "
                       "parameters",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::r2_score(space, gradsum::Linear(2), line<Space>(1, 1), data),
                       "gradsum::regression_scores: the data have 1 features but model linear "
                       "expects 2",
                       gradsum::Error);
  const auto none = DataOn<Space>::from_host(0, 1, {}, {});
  CHECK_THROWS_WITH_AS(gradsum::rmse(space, gradsum::Linear(1), line<Space>(1, 1), none),
                       "gradsum::regression_scores: the data hold no rows", gradsum::Error);
}
