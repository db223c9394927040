// SPDX-License-Identifier: Apache-2.0
// gradient_check on a random subset of rows and coordinates: it passes a
// correct model, catches a wrong derivative, and rejects bad counts.

#include "test_helpers.hpp"

#include <algorithm>

using namespace gradsum_test;

namespace {

// Linear regression whose backward pass gets the first weight's derivative
// 10% wrong: the mistake a gradient check exists to catch.
struct WrongFirstWeight : gradsum::Linear {
  using gradsum::Linear::Linear;
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    gradsum::Linear::backward(theta, x, dz, g);
    g[0] += Scalar(0.1) * dz[0] * x[0];
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
  CHECK(ok.samples == 200);
  REQUIRE(ok.coordinates.size() == 9);
  CHECK(std::is_sorted(ok.coordinates.begin(), ok.coordinates.end()));
  CHECK(std::adjacent_find(ok.coordinates.begin(), ok.coordinates.end()) == ok.coordinates.end());
  CHECK(ok.coordinates.back() < 65);
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
  const auto wrong = gradsum::gradient_check_sampled(Space(), WrongFirstWeight(4),
                                                     gradsum::SquaredError{}, w, rdata, 300, 5);
  MESSAGE("right model " << right.relative_error << ", wrong model " << wrong.relative_error);
  CHECK(right.relative_error <= 1e-8);
  CHECK(wrong.relative_error >= 1e-3);

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
