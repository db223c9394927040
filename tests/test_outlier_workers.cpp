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
      // The step's distances from three numbers per worker against the
      // same distances from each worker's full gradient, on the host:
      // g_w = sum over its rows of (x . w + b - y) (x, 1) / b_w, at theta = 0.
      const auto got = step.evaluate(theta, data);
      REQUIRE(got.worker_ratios.size() == std::size_t(W));
      std::vector<std::vector<double>> g(W, std::vector<double>(d + 1, 0.0));
      std::vector<double> total(d + 1, 0.0);
      for (int w = 0; w < W; ++w) {
        const auto rows = gradsum::partition(N, W, w);
        for (std::int64_t i = rows.begin; i < rows.end; ++i)
          for (int j = 0; j <= d; ++j) {
            const double v = (j < d ? r.x[std::size_t(i * d + j)] : 1.0) * -r.y[std::size_t(i)];
            g[std::size_t(w)][std::size_t(j)] += v / double(rows.size());
            total[std::size_t(j)] += v;
          }
      }
      double norm = 0;
      for (double t : total) norm += t * t;
      norm = std::sqrt(norm);
      std::vector<double> p(W);
      for (int w = 0; w < W; ++w)
        for (int j = 0; j <= d; ++j) p[std::size_t(w)] += g[std::size_t(w)][std::size_t(j)] * total[std::size_t(j)] / norm;
      std::vector<double> sorted = p;
      std::sort(sorted.begin(), sorted.end());
      const double m = (sorted[1] + sorted[2]) / 2;
      std::vector<double> z(W);
      for (int w = 0; w < W; ++w) {
        double d2 = 0;
        for (int j = 0; j <= d; ++j) {
          const double e = g[std::size_t(w)][std::size_t(j)] - m * total[std::size_t(j)] / norm;
          d2 += e * e;
        }
        z[std::size_t(w)] = std::sqrt(double(N / W) * d2);
      }
      sorted = z;
      std::sort(sorted.begin(), sorted.end());
      const double typical = (sorted[1] + sorted[2]) / 2;
      for (int w = 0; w < W; ++w)
        CHECK(got.worker_ratios[std::size_t(w)] ==
              doctest::Approx(z[std::size_t(w)] / typical).epsilon(1e-9));
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
