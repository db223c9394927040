// SPDX-License-Identifier: Apache-2.0
// gradient_check on a random subset of rows and coordinates: it passes a
// correct model, catches a wrong derivative (also a wrong bias among
// thousands of weights), reports it coordinate by coordinate, and rejects
// bad counts.

#include "test_helpers.hpp"

#include <algorithm>
#include <sstream>
#include <string>

using namespace gradsum_test;

namespace {

// Linear regression whose backward pass adds `extra` times the right
// partial derivative to parameter j (the bias when j is d): the mistake a
// gradient check exists to catch.
struct WrongPartial : gradsum::Linear {
  WrongPartial(int d, int j, double extra) : gradsum::Linear(d), j(j), extra(extra) {}
  int j;
  double extra;
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    gradsum::Linear::backward(theta, x, dz, g);
    g[j] += Scalar(extra) * dz[0] * (j < num_features() ? x[j] : Scalar(1));
  }
};

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("sampled gradient check: subsets, a caught mistake, bad counts", Space,
                          sampled_check) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto problem = random_problem(3000, 12, Kind::multiclass, 5, 41);
  const auto data = Data::from_host(problem.n, 12, problem.x, problem.y);
  const gradsum::Softmax model(12, 5);
  Kokkos::View<double*, typename Space::memory_space> theta("theta", 65);
  fill(theta, random_vector(65, 42, 0.3));
  const auto before = to_host(theta);
  const gradsum::Objective objective{0.05, true};
  const auto ok = gradsum::gradient_check_sampled(Space(), model, gradsum::SoftmaxCrossEntropy{},
                                                  theta, data, 200, 9, 7,
                                                  gradsum::CentralDifference{1e-5}, objective);
  CHECK(ok.relative_error <= 1e-7);
  CHECK(ok.passed);
  CHECK(ok.worst_error <= gradsum::GradientTolerance<double>::tolerance);
  CHECK(ok.samples == 200);
  REQUIRE(ok.coordinates.size() == 9);
  CHECK(std::is_sorted(ok.coordinates.begin(), ok.coordinates.end()));
  CHECK(std::adjacent_find(ok.coordinates.begin(), ok.coordinates.end()) == ok.coordinates.end());
  CHECK(ok.coordinates.front() == 0);
  CHECK(ok.coordinates.back() == 64);  // the last parameter is always checked
  CHECK(to_host(theta) == before);  // theta is left as it was
  // Another seed draws other coordinates.
  const auto other = gradsum::gradient_check_sampled(Space(), model, gradsum::SoftmaxCrossEntropy{},
                                                     theta, data, 200, 9, 8);
  CHECK(other.coordinates != ok.coordinates);

  // Checking every coordinate of the wrong model on a subset finds the
  // mistake: the first weight is off by 10% of its derivative.
  const auto regression = random_problem(3000, 4, Kind::regression, 1, 43);
  const auto rdata = Data::from_host(regression.n, 4, regression.x, regression.y);
  Kokkos::View<double*, typename Space::memory_space> w("w", 5);
  fill(w, {0.5, -0.2, 0.1, 0.3, 0.0});
  const auto right = gradsum::gradient_check_sampled(Space(), gradsum::Linear(4),
                                                     gradsum::SquaredError{}, w, rdata, 300, 5);
  const auto wrong = gradsum::gradient_check_sampled(Space(), WrongPartial(4, 0, 0.1),
                                                     gradsum::SquaredError{}, w, rdata, 300, 5);
  MESSAGE("right model " << right.relative_error << ", wrong model " << wrong.relative_error);
  CHECK(right.relative_error <= 1e-8);
  CHECK(right.passed);
  CHECK(wrong.relative_error >= 1e-3);
  CHECK_FALSE(wrong.passed);
  REQUIRE_FALSE(wrong.worst.empty());
  CHECK(wrong.worst.front().index == 0);
  CHECK(wrong.failed == 1);
  CHECK(wrong.diagnosis.rfind("d/dtheta_0 differs from central differences: analytic ", 0) == 0);
  CHECK(wrong.diagnosis.find("1 of 5 coordinate check(s) exceed the tolerance 1e-05") !=
        std::string::npos);

  // A wrong bias among 3000 weights: 12 sampled coordinates include it,
  // and it fails on its own although the global figure barely moves.
  const auto wide = random_problem(40, 3000, Kind::regression, 1, 44);
  const auto wdata = Data::from_host(wide.n, 3000, wide.x, wide.y);
  Kokkos::View<double*, typename Space::memory_space> v("v", 3001);
  fill(v, random_vector(3001, 45, 0.01));
  const auto bias = gradsum::gradient_check_sampled(Space(), WrongPartial(3000, 3000, 1.0),
                                                    gradsum::SquaredError{}, v, wdata, 40, 12, 3,
                                                    gradsum::CentralDifference{1e-5});
  INFO(bias);
  CHECK(bias.coordinates.size() == 12);
  CHECK(bias.coordinates.back() == 3000);
  CHECK_FALSE(bias.passed);
  CHECK(bias.worst.front().index == 3000);
  CHECK(bias.diagnosis.find("(off by a factor 2)") != std::string::npos);

  CHECK_THROWS_WITH_AS(gradsum::gradient_check_sampled(Space(), model, gradsum::SoftmaxCrossEntropy{},
                                                       theta, data, 0, 3),
                       doctest::Contains("num_samples must be in [1, 3000] (the rows of the data), got 0"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::gradient_check_sampled(Space(), model, gradsum::SoftmaxCrossEntropy{},
                                                       theta, data, 10, 66),
                       doctest::Contains("num_coordinates must be in [1, 65] (the model's parameters), got 66"),
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(sampled_check, Spaces);

TEST_CASE_TEMPLATE_DEFINE("full gradient check: a report per coordinate", Space, full_check) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto regression = random_problem(50, 4, Kind::regression, 1, 46);
  const auto data = Data::from_host(regression.n, 4, regression.x, regression.y);
  Kokkos::View<double*, typename Space::memory_space> w("w", 5);
  fill(w, {0.5, -0.2, 0.1, 0.3, 0.2});
  const gradsum::CentralDifference fd{1e-5};
  const auto right = gradsum::gradient_check(Space(), gradsum::Linear(4), gradsum::SquaredError{},
                                             w, data, fd);
  CHECK(right.passed);
  CHECK(right.samples == 50);
  CHECK(right.coordinates == std::vector<int>{0, 1, 2, 3, 4});
  const auto bias = gradsum::gradient_check(Space(), WrongPartial(4, 4, 1.0),
                                            gradsum::SquaredError{}, w, data, fd);
  CHECK_FALSE(bias.passed);
  CHECK(bias.worst.front().index == 4);
  CHECK(bias.worst.front().analytic == doctest::Approx(2 * bias.worst.front().numeric));
  CHECK(bias.diagnosis.rfind("d/dtheta_4 differs from central differences", 0) == 0);

}
TEST_CASE_TEMPLATE_APPLY(full_check, Spaces);

TEST_CASE_TEMPLATE_DEFINE("check_model beyond max_full still checks the last parameter", Space,
                          check_model_sampled) {
  gradsum::CheckModelOptions few;
  few.max_full = 10;
  few.sampled = 6;
  const auto wrong =
      gradsum::check_model(Space(), WrongPartial(40, 40, 1.0), gradsum::SquaredError{}, few);
  INFO(wrong);
  CHECK(wrong.coordinates.size() == 6);
  CHECK(wrong.coordinates.back() == 40);
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.worst.front().index == 40);
  CHECK(wrong.diagnosis.find("(off by a factor 2)") != std::string::npos);
  CHECK(gradsum::check_model(Space(), gradsum::Linear(40), gradsum::SquaredError{}, few).passed);

  // The report prints its verdict, the sentence and the worst coordinates.
  std::ostringstream printed;
  printed << wrong;
  CHECK(printed.str().rfind("gradient check FAILED: d/dtheta_40 differs", 0) == 0);
  CHECK(printed.str().find("\n  theta_40 (point ") != std::string::npos);
  CHECK(printed.str() == wrong.summary());
}
TEST_CASE_TEMPLATE_APPLY(check_model_sampled, Spaces);
