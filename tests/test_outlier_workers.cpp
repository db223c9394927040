// SPDX-License-Identifier: Apache-2.0
// Outlier workers (Step::watch_workers) with virtual workers on one rank.
// Expected values: hand-computed ratios of a five-worker cloud, the
// distances recomputed on the host from each worker's full gradient (the
// least-squares gradient in closed form), and which rows were corrupted.

#include "test_helpers.hpp"

#include <random>

using namespace gradsum_test;

namespace {

/// y = x . w + eps on x ~ N(0, I_d); rows in [bad, n) get their features
/// times `factor` (a corrupted shard), the targets stay.
struct Regression {
  std::int64_t n;
  int d;
  std::vector<double> x, y;
};
Regression corrupted_regression(std::int64_t n, int d, std::int64_t bad, double factor,
                                std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Regression r{n, d, std::vector<double>(std::size_t(n * d)), std::vector<double>(std::size_t(n))};
  for (std::int64_t i = 0; i < n; ++i) {
    double t = 0.5 * normal(rng);
    for (int j = 0; j < d; ++j) {
      const double v = normal(rng);
      t += (j % 2 ? -1.0 : 1.0) * v;
      r.x[std::size_t(i * d + j)] = i >= bad ? factor * v : v;
    }
    r.y[std::size_t(i)] = t;
  }
  return r;
}

/// The mean least-squares gradients at `theta` (d weights, then the bias)
/// of the W contiguous workers of `r`, then of all rows, on the host:
/// g = sum over rows of (x . w + b - y) (x, 1) / rows.
std::vector<std::vector<double>> worker_gradients(const Regression& r, int W,
                                                  const std::vector<double>& theta) {
  const int d = r.d;
  std::vector<std::vector<double>> g(std::size_t(W) + 1, std::vector<double>(d + 1, 0.0));
  for (int w = 0; w < W; ++w) {
    const auto rows = gradsum::partition(r.n, W, w);
    for (std::int64_t i = rows.begin; i < rows.end; ++i) {
      double e = theta[std::size_t(d)] - r.y[std::size_t(i)];
      for (int j = 0; j < d; ++j) e += theta[std::size_t(j)] * r.x[std::size_t(i * d + j)];
      for (int j = 0; j <= d; ++j) {
        const double v = (j < d ? r.x[std::size_t(i * d + j)] : 1.0) * e;
        g[std::size_t(w)][std::size_t(j)] += v / double(rows.size());
        g[std::size_t(W)][std::size_t(j)] += v / double(r.n);
      }
    }
  }
  return g;
}

double host_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

/// The ratios of workers of `b` samples each with mean gradients `g`
/// (W of them), computed from the vectors themselves: the centre is
/// median_w(g_w . u / ||u||) u / ||u|| (the origin when u = 0), the ratio
/// sqrt(b) ||g_w - c|| over the median of those.
std::vector<double> expected_ratios(const std::vector<std::vector<double>>& g, int W,
                                    const std::vector<double>& u, double b) {
  double norm = 0;
  for (double v : u) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<double> unit(u.size(), 0.0), p(std::size_t(W), 0.0), z(std::size_t(W), 0.0);
  for (std::size_t j = 0; j < u.size(); ++j) unit[j] = norm > 0 ? u[j] / norm : 0.0;
  for (int w = 0; w < W; ++w)
    for (std::size_t j = 0; j < u.size(); ++j) p[std::size_t(w)] += g[std::size_t(w)][j] * unit[j];
  const double m = host_median(p);
  for (int w = 0; w < W; ++w) {
    double d2 = 0;
    for (std::size_t j = 0; j < u.size(); ++j) {
      const double e = g[std::size_t(w)][j] - m * unit[j];
      d2 += e * e;
    }
    z[std::size_t(w)] = std::sqrt(b * d2);
  }
  const double typical = host_median(z);
  for (double& v : z) v /= typical;
  return z;
}

}  // namespace

TEST_CASE("outlier ratios of a five-worker cloud match the hand computation") {
  // Mean gradients (0,1), (0,-1), (1,0), (-1,0), (10,0), one sample each:
  // S = (10,0), u = (1,0), projections 0, 0, 1, -1, 10, their median 0, so
  // the centre is 0 and the distances 1, 1, 1, 1, 10 with median 1.
  const std::vector<double> b = {1, 1, 1, 1, 1}, n = {1, 1, 1, 1, 100}, c = {0, 0, 10, -10, 100};
  const auto r = gradsum::detail::outlier_ratios(b, n, c, 100);
  REQUIRE(r.size() == 5);
  for (int w = 0; w < 4; ++w) CHECK(r[std::size_t(w)] == doctest::Approx(1.0));
  CHECK(r[4] == doctest::Approx(10.0));
  // The last worker with 4 samples of the same mean (S_4 = (40,0)): its
  // distance counts sqrt(4) times, against noise that shrinks like 1/sqrt(b).
  const auto s = gradsum::detail::outlier_ratios({1, 1, 1, 1, 4}, {1, 1, 1, 1, 1600},
                                                 {0, 0, 40, -40, 1600}, 1600);
  CHECK(s[4] == doctest::Approx(20.0));
  CHECK(s[0] == doctest::Approx(1.0));
  // A worker without samples has no ratio. Without (0,-1) the median of
  // the projections 0, 1, -1, 10 is 0.5, the distances sqrt(1.25), 0.5,
  // 1.5, 9.5 and their median (sqrt(1.25) + 1.5) / 2.
  const auto e = gradsum::detail::outlier_ratios({1, 0, 1, 1, 1}, {1, 0, 1, 1, 100},
                                                 {0, 0, 10, -10, 100}, 100);
  CHECK(std::isnan(e[1]));
  CHECK(e[4] == doctest::Approx(9.5 / ((std::sqrt(1.25) + 1.5) / 2)));
  CHECK(e[2] == doctest::Approx(0.5 / ((std::sqrt(1.25) + 1.5) / 2)));
  const auto two = gradsum::detail::outlier_ratios({1, 1}, {1, 4}, {3, 6}, 9);
  CHECK(std::isnan(two[0]));
  CHECK(std::isnan(two[1]));
  CHECK(gradsum::detail::median_of({3, 1, 2, 10}) == 2.5);
}

TEST_CASE_TEMPLATE_DEFINE("watch_workers names the virtual worker with a corrupted shard, and "
                          "none on clean data",
                          Backend, corrupted_shard) {
  using Memory = typename Backend::memory_space;
  const int d = 6, W = 4;
  const std::int64_t N = 400;
  for (const bool corrupt : {true, false}) {
    CAPTURE(corrupt);
    const auto r = corrupted_regression(N, d, corrupt ? 3 * N / 4 : N, 10.0, 2711);
    const auto data = gradsum::Dataset<double, Memory>::from_host(N, d, r.x, r.y);
    auto step = gradsum::make_step<double>(Backend(), gradsum::Linear(d), gradsum::SquaredError{},
                                           gradsum::SGD{0.002});
    CHECK(step.evaluate(step.make_parameters(), data).worker_ratios.empty());  // off by default
    step.watch_workers(W);
    auto theta = step.make_parameters();
    {
      // The step's ratios from three numbers per worker against the same
      // ratios from each worker's full gradient, on the host. The centre
      // lies along the previous evaluation's gradient: the unwatched one
      // above, at theta = 0; then this one, at theta = 0 too; then the
      // evaluation at theta1, along the gradient at 0.
      const std::vector<double> zero(d + 1, 0.0);
      std::vector<double> theta1(d + 1);
      for (int j = 0; j <= d; ++j) theta1[std::size_t(j)] = 0.1 * (j % 3) - 0.05;
      const auto at_zero = worker_gradients(r, W, zero), at_one = worker_gradients(r, W, theta1);
      const auto first = step.evaluate(theta, data);
      auto theta_one = step.make_parameters();
      step.copy_from_host(theta1, theta_one);
      const auto second = step.evaluate(theta_one, data);
      const auto want_first = expected_ratios(at_zero, W, at_zero[W], double(N / W));
      const auto want_second = expected_ratios(at_one, W, at_zero[W], double(N / W));
      REQUIRE(first.worker_ratios.size() == std::size_t(W));
      REQUIRE(second.worker_ratios.size() == std::size_t(W));
      for (int w = 0; w < W; ++w) {
        CAPTURE(w);
        CHECK(first.worker_ratios[std::size_t(w)] ==
              doctest::Approx(want_first[std::size_t(w)]).epsilon(1e-9));
        CHECK(second.worker_ratios[std::size_t(w)] ==
              doctest::Approx(want_second[std::size_t(w)]).epsilon(1e-9));
      }
      // Before any evaluation there is no direction: the centre is the
      // origin and the distances are the workers' norms.
      auto fresh = gradsum::make_step<double>(Backend(), gradsum::Linear(d), gradsum::SquaredError{});
      fresh.watch_workers(W);
      const auto none = fresh.evaluate(theta_one, data);
      const auto want_none = expected_ratios(at_one, W, zero, double(N / W));
      REQUIRE(none.worker_ratios.size() == std::size_t(W));
      for (int w = 0; w < W; ++w)
        CHECK(none.worker_ratios[std::size_t(w)] ==
              doctest::Approx(want_none[std::size_t(w)]).epsilon(1e-9));
    }
    int flagged_bad = 0, flagged_other = 0;
    for (int s = 0; s < 30; ++s) {
      const auto res = step(theta, data);
      for (int w : res.outliers) (w == W - 1 ? flagged_bad : flagged_other) += 1;
      if (corrupt && s == 0) {
        REQUIRE(res.outliers.size() == 1);
        CHECK(res.outliers[0] == W - 1);
        CHECK(res.worker_ratios[W - 1] > 10);
      }
    }
    CHECK(flagged_other == 0);
    if (corrupt) CHECK(flagged_bad > 0);
    else CHECK(flagged_bad == 0);
  }
}
TEST_CASE_TEMPLATE_APPLY(corrupted_shard, gradsum_test::Spaces);

TEST_CASE("watch_workers in float names the corrupted shard's worker, with ratios near double's") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const int d = 6;
  const std::int64_t N = 400;
  const auto r = corrupted_regression(N, d, 3 * N / 4, 10.0, 2711);
  auto in_float = gradsum::make_step<float>(Space(), gradsum::Linear(d), gradsum::SquaredError{});
  auto in_double = gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{});
  in_float.watch_workers(4);
  in_double.watch_workers(4);
  const auto single = in_float.evaluate(
      in_float.make_parameters(),
      gradsum::Dataset<float, Space::memory_space>::from_host(N, d, r.x, r.y));
  const auto twice = in_double.evaluate(
      in_double.make_parameters(), gradsum::Dataset<double, Space::memory_space>::from_host(N, d, r.x, r.y));
  REQUIRE(single.outliers.size() == 1);
  CHECK(single.outliers[0] == 3);
  for (std::size_t w = 0; w < 4; ++w)
    CHECK(single.worker_ratios[w] == doctest::Approx(twice.worker_ratios[w]).epsilon(1e-4));
}

TEST_CASE("watch_workers refuses fewer than three workers and a threshold of 1 or less") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(2), gradsum::SquaredError{});
  CHECK_THROWS_WITH(step.watch_workers(1),
                    "gradsum::Step::watch_workers: naming an outlier needs at least 3 workers "
                    "(parts_per_rank x ranks), got 1 x 1 = 1; with two, each is as far from "
                    "the other and neither can be named");
  CHECK_THROWS_WITH(step.watch_workers(2),
                    doctest::Contains("needs at least 3 workers (parts_per_rank x ranks), got 2 x 1 = 2"));
  CHECK_THROWS_WITH(step.watch_workers(4, 1.0),
                    "gradsum::Step::watch_workers: threshold must be finite and above 1 (a ratio "
                    "to the typical worker's distance), got 1");
  CHECK_THROWS_WITH(step.watch_workers(-1),
                    doctest::Contains("gradsum::Step::measure_workers: parts_per_rank must be in"));
  step.watch_workers(3);
  step.watch_workers(0);  // stops watching
}
