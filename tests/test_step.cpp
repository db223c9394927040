// SPDX-License-Identifier: Apache-2.0
// The summed-gradient step: textbook sums, the partition identity, the
// gradient check, convergence to least squares, and rejected inputs.

#include "test_helpers.hpp"

#include <cfloat>
#include <cmath>
#include <algorithm>

using namespace gradsum_test;
using gradsum::BinaryCrossEntropy;
using gradsum::Linear;
using gradsum::RowRange;
using gradsum::Softmax;
using gradsum::SoftmaxCrossEntropy;
using gradsum::SquaredError;

namespace {

template <class Space, class Scalar>
using HostData = gradsum::Dataset<Scalar, typename Space::memory_space>;

template <class Space, class Scalar>
HostData<Space, Scalar> to_dataset(const HostProblem& p) {
  return HostData<Space, Scalar>::from_host(p.n, p.d, p.x, p.y);
}

// Summed gradient and loss of rows [begin, end) with mean = false.
template <class Step, class Theta, class Data>
std::vector<double> part_sums(Step& step, const Theta& theta, const Data& data,
                              RowRange rows) {
  const int P = step.num_parameters();
  if (rows.size() == 0) return std::vector<double>(std::size_t(P) + 1, 0.0);
  step.evaluate(theta, data, rows);
  auto sums = to_host(step.sums());
  sums.resize(std::size_t(P) + 1);
  return sums;
}

template <class Space, class Scalar, class Model, class Loss>
void check_partition_identity(const Model& model, const Loss& loss, Kind kind,
                              std::uint64_t seed) {
  const std::int64_t n = 97;
  const int outputs = model.num_outputs();
  const auto problem = random_problem(n, model.num_features(), kind, outputs, seed);
  const auto data = to_dataset<Space, Scalar>(problem);
  auto step = gradsum::make_step<Scalar>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  const auto theta_host = random_vector(std::size_t(step.num_parameters()), seed + 1);
  fill(theta, theta_host);
  const int P = step.num_parameters();

  const auto full = part_sums(step, theta, data, RowRange{0, n});
  const auto reference = reference_sums(problem, outputs, kind, theta_host, 0, n);
  CHECK(relative_distance(full, reference, std::size_t(P) + 1) <=
        Tolerance<Scalar>::partition * 10);

  std::mt19937_64 rng(seed + 2);
  for (int parts = 1; parts <= 8; ++parts) {
    // Random cut points, repeats allowed, so some parts are empty.
    std::vector<std::int64_t> cuts{0, n};
    for (int c = 1; c < parts; ++c) cuts.push_back(std::int64_t(rng() % (n + 1)));
    if (parts >= 3) cuts.push_back(cuts.back());  // force an empty part
    std::sort(cuts.begin(), cuts.end());
    std::vector<double> total(std::size_t(P) + 1, 0.0);
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
      const auto part = part_sums(step, theta, data, RowRange{cuts[c], cuts[c + 1]});
      for (std::size_t j = 0; j < total.size(); ++j) total[j] += part[j];
    }
    INFO("parts = " << cuts.size() - 1 << ", seed = " << seed);
    CHECK(relative_distance(total, full, total.size()) <= Tolerance<Scalar>::partition);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("textbook: two workers +0.5 and -0.2 sum to 0.3", Space,
                          step_textbook) {
  // Squared error on a one-feature linear model at theta = 0: a sample
  // (x = 1, y) contributes -y to the weight's gradient.
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      2, 1, {1.0, 1.0}, {-0.5, 0.2});
  auto step = gradsum::make_step<double>(Space(), Linear(1), SquaredError{},
                                         gradsum::SGD{}, gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  step.evaluate(theta, data, RowRange{0, 1});
  const double worker1 = to_host(step.sums())[0];
  step.evaluate(theta, data, RowRange{1, 2});
  const double worker2 = to_host(step.sums())[0];
  step.evaluate(theta, data);
  const double both = to_host(step.sums())[0];
  CHECK(worker1 == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(worker2 == doctest::Approx(-0.2).epsilon(1e-15));
  CHECK(both == doctest::Approx(0.3).epsilon(1e-15));

  // The vector version adds component-wise: x = (1, 2, 3) for both samples.
  const auto data3 = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      2, 3, {1, 2, 3, 1, 2, 3}, {-0.5, 0.2});
  auto step3 = gradsum::make_step<double>(Space(), Linear(3), SquaredError{},
                                          gradsum::SGD{}, gradsum::Objective{0.0, false});
  auto theta3 = step3.make_parameters();
  step3.evaluate(theta3, data3);
  const auto g = to_host(step3.sums());
  const double expected[] = {0.3, 0.6, 0.9, 0.3};  // 0.3 * (x, 1)
  for (int j = 0; j < 4; ++j) CHECK(g[j] == doctest::Approx(expected[j]).epsilon(1e-14));
}
TEST_CASE_TEMPLATE_APPLY(step_textbook, Spaces);

TEST_CASE_TEMPLATE_DEFINE("partition identity: parts of a batch sum to the batch gradient",
                          Space, partition_identity) {
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    check_partition_identity<Space, double>(Linear(5), SquaredError{}, Kind::regression, seed);
    check_partition_identity<Space, double>(Linear(5), BinaryCrossEntropy{}, Kind::binary, seed);
    check_partition_identity<Space, double>(Softmax(4, 3), SoftmaxCrossEntropy{},
                                            Kind::multiclass, seed);
  }
  check_partition_identity<Space, float>(Linear(5), SquaredError{}, Kind::regression, 21);
  check_partition_identity<Space, float>(Softmax(4, 3), SoftmaxCrossEntropy{},
                                         Kind::multiclass, 22);
}
TEST_CASE_TEMPLATE_APPLY(partition_identity, Spaces);

TEST_CASE_TEMPLATE_DEFINE("gradient check: analytic against central differences",
                          Space, gradient_check) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const gradsum::Objective objective{0.3, true};
  auto run = [&](auto model, auto loss, Kind kind, double theta_scale, double x_scale) {
    const auto problem = random_problem(40, model.num_features(), kind,
                                        model.num_outputs(), 5, x_scale);
    const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
    auto theta = Kokkos::View<double*, typename Space::memory_space>(
        "theta", std::size_t(model.num_parameters()));
    fill(theta, random_vector(theta.extent(0), 6, theta_scale));
    const auto report = gradsum::gradient_check(Space(), model, loss, theta, data,
                                                gradsum::CentralDifference{1e-5}, objective);
    INFO(model.name() << " x " << loss.name() << ": " << report);
    CHECK(report.relative_error <= 1e-7);
    CHECK(report.passed);
    return report.relative_error;
  };
  run(Linear(4), SquaredError{}, Kind::regression, 0.5, 1.0);
  run(Linear(4), BinaryCrossEntropy{}, Kind::binary, 0.5, 1.0);
  run(Softmax(4, 5), SoftmaxCrossEntropy{}, Kind::multiclass, 0.5, 1.0);

  // Logistic regression far in the tails: logits of magnitude about 30,
  // where a naive log(1 + e^z) or sigmoid would lose everything.
  const auto problem = random_problem(30, 3, Kind::binary, 2, 9);
  auto x = problem.x;
  for (std::int64_t i = 0; i < problem.n; ++i) {
    x[std::size_t(i) * 3] = (i % 2 ? 1.0 : -1.0) * (1.0 + 0.01 * double(i));
  }
  const auto data = Data::from_host(problem.n, 3, x, problem.y);
  auto theta = Kokkos::View<double*, typename Space::memory_space>("theta", 4);
  fill(theta, {30.0, 0.01, -0.02, 0.0});  // z = +-30 … +-39
  const auto report = gradsum::gradient_check(Space(), Linear(3), BinaryCrossEntropy{},
                                              theta, data, gradsum::CentralDifference{1e-5});
  CHECK(report.relative_error <= 1e-7);
  CHECK(report.passed);
}
TEST_CASE_TEMPLATE_APPLY(gradient_check, Spaces);

TEST_CASE("binary cross-entropy stays finite and exact for |z| up to 1e4") {
  const double zs[] = {-1e4, -745.0, -30.0, 0.0, 30.0, 745.0, 1e4};
  for (double z : zs) {
    for (double y : {0.0, 1.0}) {
      const double value = BinaryCrossEntropy::value(&z, 1, y);
      double dz = 0;
      BinaryCrossEntropy::derivative(&z, 1, y, &dz);
      // Closed forms: log(1 + e^z) - y z = z (1 - y) + log(1 + e^-z) for z > 0.
      const double expected = z > 0 ? z * (1 - y) + std::log1p(std::exp(-z))
                                    : std::log1p(std::exp(z)) - y * z;
      INFO("z = " << z << ", y = " << y);
      double fused_dz = 0;
      const double fused = BinaryCrossEntropy::value_and_derivative(&z, 1, y, &fused_dz);
      CHECK(fused == doctest::Approx(value).epsilon(1e-15));
      CHECK(fused_dz == doctest::Approx(dz).epsilon(1e-15));
      CHECK(std::isfinite(value));
      CHECK(value == doctest::Approx(expected).epsilon(1e-15));
      CHECK(std::isfinite(dz));
      CHECK(std::fabs(dz) <= 1.0);
    }
  }
}

TEST_CASE("binary cross-entropy: a confident prediction keeps its small derivative") {
  // sigmoid(z) - y in closed form, without a difference: -1 / (1 + e^z)
  // for y = 1, 1 / (1 + e^-z) for y = 0, in long double. At z = 30, y = 1
  // the difference of sigmoid(z) and 1 would keep no correct digit.
  const double zs[] = {-745.0, -300.0, -30.0, -20.0, -5.0, -0.5, 0.0,
                       0.5,    5.0,    20.0,  30.0,  300.0, 745.0};
  for (double z : zs)
    for (double y : {0.0, 1.0}) {
      const long double expected =
          y == 1.0 ? -1.0L / (1.0L + std::exp((long double)z)) : 1.0L / (1.0L + std::exp(-(long double)z));
      double dz = 0, fused_dz = 0, d2 = 0;
      BinaryCrossEntropy::derivative(&z, 1, y, &dz);
      BinaryCrossEntropy::value_and_derivative(&z, 1, y, &fused_dz);
      BinaryCrossEntropy::second_derivative(&z, 1, y, &d2);
      // sigmoid(z) sigmoid(-z) = 1 / ((1 + e^z)(1 + e^-z)).
      const long double expected_d2 =
          1.0L / ((1.0L + std::exp((long double)z)) * (1.0L + std::exp(-(long double)z)));
      INFO("z = " << z << ", y = " << y);
      if (std::fabs(expected) >= 1e-300L) {  // normal: four ulps, relative
        CHECK(std::fabs(dz - expected) <= 4 * DBL_EPSILON * std::fabs(expected));
        CHECK(std::fabs(fused_dz - expected) <= 4 * DBL_EPSILON * std::fabs(expected));
          } else {  // below the normal range (z = +-745): tiny
        CHECK(std::fabs(dz) <= 1e-300);
        CHECK(std::fabs(fused_dz) <= 1e-300);
      }
      if (expected_d2 >= 1e-300L)
        CHECK(std::fabs(d2 - expected_d2) <= 8 * DBL_EPSILON * expected_d2);
      else
        CHECK(d2 <= 1e-300);
    }
}

TEST_CASE_TEMPLATE_DEFINE("gradient descent reaches the least-squares solution", Space,
                          least_squares) {
  const int d = 3;
  const std::int64_t n = 200;
  const auto problem = random_problem(n, d, Kind::regression, 1, 31);
  auto y = problem.y;
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = 1.5 * problem.x[i * d] - 2.0 * problem.x[i * d + 1] + 0.5 + 0.3 * y[i];
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      n, d, problem.x, y);

  // Normal equations A^T A w = A^T y with A = [X, 1], solved on the host.
  const int m = d + 1;
  std::vector<double> A(std::size_t(m) * m, 0.0), b(std::size_t(m), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const double row[4] = {problem.x[i * d], problem.x[i * d + 1], problem.x[i * d + 2], 1.0};
    for (int r = 0; r < m; ++r) {
      for (int c = 0; c < m; ++c) A[r * m + c] += row[r] * row[c];
      b[r] += row[r] * y[i];
    }
  }
  const auto solution = solve(A, b);

  auto step = gradsum::make_step<double>(Space(), Linear(d), SquaredError{},
                                         gradsum::SGD{0.5});
  auto theta = step.make_parameters();
  gradsum::StepResult result;
  for (int it = 0; it < 2000; ++it) result = step(theta, data);
  const auto w = to_host(theta);
  for (int j = 0; j < m; ++j) {
    INFO("parameter " << j);
    CHECK(std::fabs(w[j] - solution[j]) <= 1e-6);
  }
  CHECK(result.gradient_norm <= 1e-8);
  CHECK(result.count == n);
}
TEST_CASE_TEMPLATE_APPLY(least_squares, Spaces);

TEST_CASE_TEMPLATE_DEFINE("rejected inputs name what was wrong", Space, step_rejected) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(3, 2, {1, 2, 3, 4, 5, 6}, {0, 1, 2});

  SUBCASE("feature width mismatch") {
    auto step = gradsum::make_step<double>(Space(), Linear(3), SquaredError{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data),
                         "gradsum::Step::evaluate: the data have 2 features but "
                         "model linear expects 3",
                         gradsum::Error);
  }
  SUBCASE("softmax target outside [0, C)") {
    auto step = gradsum::make_step<double>(Space(), Softmax(2, 2), SoftmaxCrossEntropy{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data),
                         "gradsum::Step::evaluate: row 2 of the data "
                         "has a target the loss softmax_cross_entropy rejects for 2 "
                         "output(s), or a non-finite feature: target is 2",
                         gradsum::Error);
  }
  SUBCASE("a non-integer class is rejected too") {
    const auto fractional = Data::from_host(2, 2, {1, 2, 3, 4}, {0, 0.5});
    auto step = gradsum::make_step<double>(Space(), Softmax(2, 3), SoftmaxCrossEntropy{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, fractional),
                         doctest::Contains("row 1 of the data"), gradsum::Error);
  }
  SUBCASE("non-positive learning rate") {
    for (double lr : {0.0, -0.1, std::nan("")}) {
      CHECK_THROWS_WITH_AS(gradsum::make_step<double>(Space(), Linear(2), SquaredError{},
                                                      gradsum::SGD{lr}),
                           doctest::Contains("gradsum::SGD: learning rate lr must be "
                                             "positive and finite, got"),
                           gradsum::Error);
    }
  }
  SUBCASE("non-positive finite-difference step") {
    CHECK_THROWS_WITH_AS(
        gradsum::make_step<double>(Space(), Linear(2), SquaredError{}, gradsum::SGD{},
                                   gradsum::Objective{}, gradsum::CentralDifference{0.0}),
        "gradsum::CentralDifference: eps must be positive and finite, got 0",
        gradsum::Error);
    CHECK_THROWS_WITH_AS(
        gradsum::make_step<double>(Space(), Linear(2), SquaredError{}, gradsum::SGD{},
                                   gradsum::Objective{}, gradsum::CentralDifference{-1e-6}),
        doctest::Contains("eps must be positive"), gradsum::Error);
  }
  SUBCASE("negative l2") {
    CHECK_THROWS_WITH_AS(gradsum::make_step<double>(Space(), Linear(2), SquaredError{},
                                                    gradsum::SGD{}, gradsum::Objective{-1.0}),
                         "gradsum::Objective: l2 must be non-negative and finite, got -1",
                         gradsum::Error);
  }
  SUBCASE("empty data where a gradient is requested") {
    const auto empty = Data::from_host(0, 2, {}, {});
    auto step = gradsum::make_step<double>(Space(), Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, empty),
                         doctest::Contains("the batch holds no samples on any worker"),
                         gradsum::Error);
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data, RowRange{1, 1}),
                         doctest::Contains("the batch holds no samples"), gradsum::Error);
  }
  SUBCASE("rows outside the data") {
    auto step = gradsum::make_step<double>(Space(), Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data, RowRange{1, 5}),
                         "gradsum::Step::evaluate: rows [1, 5) are outside the 3 available",
                         gradsum::Error);
  }
  SUBCASE("parameters of the wrong length") {
    auto step = gradsum::make_step<double>(Space(), Linear(2), SquaredError{});
    Kokkos::View<double*, typename Space::memory_space> theta("theta", 2);
    CHECK_THROWS_WITH_AS(step.evaluate(theta, data),
                         "gradsum::Step::evaluate: theta has 2 entries but model linear "
                         "has 3 parameters",
                         gradsum::Error);
  }
  SUBCASE("a model the loss cannot take") {
    CHECK_THROWS_WITH_AS(gradsum::make_step<double>(Space(), Softmax(2, 3), SquaredError{}),
                         "gradsum::Step: loss squared_error cannot take a model with 3 "
                         "output(s) (model softmax)",
                         gradsum::Error);
  }
  SUBCASE("a non-finite feature") {
    const auto bad = Data::from_host(2, 2, {1, 2, 3, std::nan("")}, {0, 1});
    auto step = gradsum::make_step<double>(Space(), Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step.evaluate(theta, bad), doctest::Contains("row 1 of the data"),
                         gradsum::Error);
    CHECK_THROWS_WITH_AS(step.evaluate(theta, bad), doctest::Contains("feature 1 is nan"),
                         gradsum::Error);
  }
}
TEST_CASE_TEMPLATE_APPLY(step_rejected, Spaces);

TEST_CASE_TEMPLATE_DEFINE("data and parameters in any memory space the space can access", Space,
                          memory_spaces) {
  // The same problem with data in the space's own memory and, where the
  // space can read it, in host memory: the same gradient. (Memory it
  // cannot read is rejected at compile time: tests/compile_fail.)
  const auto p = random_problem(20, 3, Kind::regression, 1, 4);
  auto native = gradsum::make_step<double>(Space(), Linear(3), SquaredError{});
  auto theta = native.make_parameters();
  fill(theta, {0.1, -0.2, 0.3, 0.05});
  const auto own = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
  native.evaluate(theta, own);
  const auto expected = to_host(native.gradient());
  if constexpr (Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible) {
    const auto host = gradsum::Dataset<double, Kokkos::HostSpace>::from_host(p.n, p.d, p.x, p.y);
    Kokkos::View<double*, Kokkos::HostSpace> host_theta("theta", 4);
    Kokkos::deep_copy(host_theta, theta);
    native.evaluate(host_theta, host);
    CHECK(relative_distance(to_host(native.gradient()), expected, 4) <= 1e-15);
  }
}
TEST_CASE_TEMPLATE_APPLY(memory_spaces, Spaces);

TEST_CASE_TEMPLATE_DEFINE("a non-finite loss throws naming the sample, or skips the step", Space,
                          nonfinite) {
  // Row 2's features are finite but so large that z = w . x overflows.
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(4, 2, {1, 2, 3, 4, 1e308, 1e308, 5, 6}, {0, 1, 1, 0});
  for (auto reduction : {0, 1}) {
    INFO((reduction ? "reproducible" : "sum"));
    auto run = [&](gradsum::NonFinite action, auto reduce) {
      auto step = gradsum::make_step<double>(Space(), Linear(2), gradsum::BinaryCrossEntropy{},
                                             gradsum::SGD{0.1}, gradsum::Objective{0, true, action},
                                             gradsum::Analytic{}, reduce);
      auto theta = step.make_parameters();
      fill(theta, {10.0, 10.0, 0.0});
      if (action == gradsum::NonFinite::throw_error) {
        CHECK_THROWS_WITH_AS(step(theta, data),
                             "gradsum::Step::evaluate: the loss or its gradient is not finite "
                             "for sample 2 of the selected rows (its features and target are "
                             "finite: the parameters or the model's outputs overflow)",
                             gradsum::Error);
      } else {
        const auto r = step(theta, data);
        CHECK(r.skipped);
        CHECK(step.skipped_steps() == 1);
        CHECK(to_host(theta) == std::vector<double>{10.0, 10.0, 0.0});  // unchanged
        // Without the bad row the step goes ahead.
        const auto fine = step(theta, data, gradsum::RowRange{0, 2});
        CHECK_FALSE(fine.skipped);
        CHECK(to_host(theta) != std::vector<double>{10.0, 10.0, 0.0});
      }
    };
    for (auto action : {gradsum::NonFinite::throw_error, gradsum::NonFinite::skip}) {
      if (reduction) run(action, gradsum::Reproducible{});
      else run(action, gradsum::Sum{});
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(nonfinite, Spaces);

namespace {
// A finalizing body: writes g(j) = 2 (j + 1) and adds (j + 1)^2 and
// (j + 1) into the two sums.
template <class G>
struct SquaresAndCounts {
  using value_type = double[];
  using size_type = int;
  int value_count;
  G g;
  KOKKOS_FUNCTION void operator()(int j, double* acc) const {
    const double v = double(j + 1);
    g(j) = 2 * v;
    acc[0] += v * v;
    acc[1] += v;
  }
  KOKKOS_FUNCTION void init(double* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(double* dst, const double* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};
}  // namespace

// The finalizing pass's two sums over every parameter, in parts of blocks
// (one block per rank; parts of 512 coordinates on CPU threads, 32 on a
// device): every parameter once, closed forms n(n+1)(2n+1)/6 and n(n+1)/2
// (exact in double here), at sizes below, at and around a part and across
// several, on 1 to 5 blocks. Summed block by block (as ranks that each
// hold their block do) the parts are the same bits.
TEST_CASE_TEMPLATE_DEFINE("the finalizing pass sums over every parameter once", Space,
                          finalize_sums) {
  using Memory = typename Space::memory_space;
  using Norms = gradsum::detail::OrderedNorms<double, Memory>;
  for (int blocks : {1, 2, 3, 5}) {
    for (int n : {0, 1, 511, 512, 513, 1537, 5000}) {
      INFO("n " << n << " in " << blocks << " blocks");
      const Norms norms(n, blocks, Norms::template part_size<Space>());
      Kokkos::View<double*, Memory> g("g", std::size_t(n));
      const SquaresAndCounts<decltype(g)> body{2, g};
      double out_data[2] = {-1, -1};
      Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out(
          out_data, 2);
      norms.sum_blocks(Space(), "test::finalize", 0, blocks, body);
      norms.totals(out);
      const double m = n;
      CHECK(out(0) == m * (m + 1) * (2 * m + 1) / 6);
      CHECK(out(1) == m * (m + 1) / 2);
      const auto h = to_host(g);
      bool every = true;
      for (int j = 0; j < n; ++j) every = every && h[std::size_t(j)] == 2.0 * (j + 1);
      CHECK(every);
      const auto& bounds = norms.block_bounds();
      const std::vector<double> together(norms.host_parts(), norms.host_parts() + bounds.back());
      std::vector<double> apart(together.size(), -1);
      std::fill(norms.host_parts(), norms.host_parts() + bounds.back(), -1.0);
      for (int k = 0; k < blocks; ++k) {
        norms.sum_blocks(Space(), "test::finalize", k, k + 1, body);
        for (auto v = bounds[std::size_t(k)]; v < bounds[std::size_t(k) + 1]; ++v)
          apart[std::size_t(v)] = norms.host_parts()[v];
      }
      CHECK(apart == together);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(finalize_sums, Spaces);
