// SPDX-License-Identifier: Apache-2.0
// Critical-point classification: eigenvalues against matrices with known
// spectra, Lanczos against the exact extremes, and the four textbook cases
// (minimum, maximum, saddle, a plateau), then a trained model.

#include "test_helpers.hpp"

#include <algorithm>

using namespace gradsum_test;
using gradsum::CriticalPoint;
using gradsum::Curvature;

namespace {

// Q D Q^T with Q = I - 2 u u^T / u^T u (a Householder reflection): a dense
// symmetric matrix whose eigenvalues are exactly D.
std::vector<double> with_spectrum(const std::vector<double>& D, std::uint64_t seed) {
  const int n = int(D.size());
  const auto u = random_vector(std::size_t(n), seed, 1.0);
  double uu = 0;
  for (double v : u) uu += v * v;
  std::vector<double> Q(std::size_t(n) * n), A(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) Q[std::size_t(i) * n + j] = (i == j) - 2 * u[i] * u[j] / uu;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k)
        A[std::size_t(i) * n + j] += Q[std::size_t(i) * n + k] * D[k] * Q[std::size_t(j) * n + k];
  return A;
}

// Classifies the point x of a function given by its gradient, through
// finite-difference products and Lanczos.
template <class Gradient>
CriticalPoint classify_at(Gradient gradient, std::vector<double> x) {
  const int P = int(x.size());
  const auto c = gradsum::curvature_lanczos(
      gradsum::finite_difference_product(gradient, std::move(x), 1e-4), P);
  return gradsum::classify(c, 1e-6);
}

}  // namespace

TEST_CASE("symmetric eigenvalues: known spectra, errors") {
  const auto e = gradsum::symmetric_eigenvalues({2, 1, 1, 2}, 2);
  CHECK(e[0] == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(e[1] == doctest::Approx(3.0).epsilon(1e-14));
  const std::vector<double> D{-3.5, -1e-3, 0.0, 0.25, 2.0, 7.0, 7.0, 40.0};
  const auto found = gradsum::symmetric_eigenvalues(with_spectrum(D, 3), 8);
  for (std::size_t i = 0; i < D.size(); ++i) CHECK(found[i] == doctest::Approx(D[i]).scale(40).epsilon(1e-12));
  CHECK_THROWS_WITH_AS(gradsum::symmetric_eigenvalues({1, 2, 3, 4}, 2),
                       doctest::Contains("not symmetric (entry (0, 1) is 2, entry (1, 0) is 3)"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::symmetric_eigenvalues({1, 2, 3}, 2),
                       doctest::Contains("expected 2 x 2 values, got 3"), gradsum::Error);
}

TEST_CASE("Lanczos finds the extreme eigenvalues of a large operator from products alone") {
  const int P = 120;
  std::vector<double> D(P);
  for (int i = 0; i < P; ++i) D[std::size_t(i)] = 1.0 + 0.05 * i;  // 1 … 6.95
  D[0] = -2.0;
  D[P - 1] = 11.0;
  const auto A = with_spectrum(D, 9);
  int products = 0;
  auto product = [&](const std::vector<double>& v, std::vector<double>& out) {
    ++products;
    out.assign(std::size_t(P), 0.0);
    for (int i = 0; i < P; ++i)
      for (int j = 0; j < P; ++j) out[std::size_t(i)] += A[std::size_t(i) * P + j] * v[std::size_t(j)];
  };
  const Curvature c = gradsum::curvature_lanczos(product, P, 40);
  CHECK(c.min_eigenvalue == doctest::Approx(-2.0).epsilon(1e-8));
  CHECK(c.max_eigenvalue == doctest::Approx(11.0).epsilon(1e-8));
  CHECK(c.products == products);
  CHECK(products <= 40);
  CHECK_FALSE(c.exact);
}

TEST_CASE("minimum, maximum, saddle and a plateau are told apart") {
  using V = std::vector<double>;
  // f = x^2 + 3 y^2 at its minimum.
  CHECK(classify_at([](const V& p, V& g) { g = {2 * p[0], 6 * p[1]}; }, {0, 0}) ==
        CriticalPoint::minimum);
  // f = -(x^2 + y^2 + z^2) at its maximum.
  CHECK(classify_at([](const V& p, V& g) { g = {-2 * p[0], -2 * p[1], -2 * p[2]}; },
                    {0, 0, 0}) == CriticalPoint::maximum);
  // f = x^2 - y^2: the textbook saddle.
  CHECK(classify_at([](const V& p, V& g) { g = {2 * p[0], -2 * p[1]}; }, {0, 0}) ==
        CriticalPoint::saddle);
  // A "recliner chair": f = sum_i max(0, |x_i| - 1)^3 is exactly flat on the
  // square |x_i| <= 1, where its gradient and Hessian vanish.
  auto recliner = [](const V& p, V& g) {
    g.resize(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double over = std::fabs(p[i]) - 1;
      g[i] = over > 0 ? 3 * over * over * (p[i] > 0 ? 1 : -1) : 0.0;
    }
  };
  CHECK(classify_at(recliner, {0.3, -0.5}) == CriticalPoint::flat);
  // Outside the plateau the same function curves upwards.
  V g;
  recliner({2.0, 0.0}, g);
  CHECK(g[0] == 3.0);
  CHECK(gradsum::describe(CriticalPoint::saddle) == std::string("saddle point"));
}

TEST_CASE_TEMPLATE_DEFINE("a trained model sits at a minimum, exact and Lanczos agree", Space,
                          critical_model) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto problem = random_problem(60, 4, Kind::regression, 1, 21);
  const auto data = Data::from_host(problem.n, 4, problem.x, problem.y);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(4), gradsum::SquaredError{},
                                         gradsum::Newton{}, gradsum::Objective{0.1, true});
  auto theta = step.make_parameters();
  for (int t = 0; t < 3; ++t) step(theta, data);
  CHECK(step.evaluate(theta, data).gradient_norm < 1e-10);
  const auto exact = gradsum::curvature(step, theta, data, data.all_rows());
  CHECK(exact.exact);
  gradsum::CurvatureOptions lanczos;
  lanczos.max_exact = 0;
  const auto estimate = gradsum::curvature(step, theta, data, data.all_rows(), lanczos);
  CHECK_FALSE(estimate.exact);
  // J is quadratic: central differences of its gradient are exact up to rounding.
  CHECK(estimate.min_eigenvalue == doctest::Approx(exact.min_eigenvalue).epsilon(1e-6));
  CHECK(estimate.max_eigenvalue == doctest::Approx(exact.max_eigenvalue).epsilon(1e-6));
  CHECK(gradsum::classify(exact, 1e-8) == CriticalPoint::minimum);

  // The same objective through a one-layer identity MLP (its parameters in
  // another order; the spectrum does not care), which has no Hessian of its
  // own: Lanczos alone.
  auto mlp_step = gradsum::make_step<double>(Space(), gradsum::MLP(4, {}, 1), gradsum::SquaredError{},
                                             gradsum::SGD{}, gradsum::Objective{0.1, true});
  auto mlp_theta = mlp_step.make_parameters();
  const auto through_mlp = gradsum::curvature(mlp_step, mlp_theta, data, data.all_rows());
  CHECK_FALSE(through_mlp.exact);
  CHECK(through_mlp.min_eigenvalue == doctest::Approx(exact.min_eigenvalue).epsilon(1e-6));
  CHECK(through_mlp.max_eigenvalue == doctest::Approx(exact.max_eigenvalue).epsilon(1e-6));
}
TEST_CASE_TEMPLATE_APPLY(critical_model, Spaces);
