// SPDX-License-Identifier: Apache-2.0
// gradsum::suspect_rows: on synthetic sets whose labels this file flips
// (the flipped rows are the independent fact), linear and nonlinear, the
// flipped rows rank first; the margins against a host computation; refusals.

#include "test_helpers.hpp"

#include <algorithm>
#include <random>
#include <set>

using namespace gradsum_test;

namespace {

template <class Space>
using Data = gradsum::Dataset<double, typename Space::memory_space>;

// n points of d features, labelled by `rule` of the first two, kept only outside a gap
// around the boundary (so that a clean label is never in doubt); then
// `flips` rows drawn at random get the other label.
struct Flipped {
  HostProblem p;
  std::set<std::int64_t> flipped;
};

template <class Rule>
Flipped flipped_set(std::int64_t n, std::int64_t flips, std::uint64_t seed, Rule rule, int d = 2) {
  INFO("seed = " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Flipped f;
  f.p.n = n;
  f.p.d = d;
  while (std::int64_t(f.p.y.size()) < n) {
    const double a = u(rng), b = u(rng), side = rule(a, b);
    if (std::fabs(side) < 0.3) continue;
    f.p.x.insert(f.p.x.end(), {a, b});
    for (int j = 2; j < d; ++j) f.p.x.push_back(u(rng));  // features the rule ignores
    f.p.y.push_back(side > 0 ? 1.0 : 0.0);
  }
  while (std::int64_t(f.flipped.size()) < flips) f.flipped.insert(std::int64_t(rng() % n));
  for (auto r : f.flipped) f.p.y[std::size_t(r)] = 1 - f.p.y[std::size_t(r)];
  return f;
}

template <class Space, class Model>
std::set<std::int64_t> suspects_after_training(const Flipped& f, const Model& model,
                                               double lr, std::int64_t epochs,
                                               std::vector<double> start = {},
                                               double* accuracy = nullptr) {
  const auto data = Data<Space>::from_host(f.p.n, f.p.d, f.p.x, f.p.y);
  auto step = gradsum::make_step<double>(Space(), model, gradsum::BinaryCrossEntropy{},
                                         gradsum::Adam{lr});
  auto theta = step.make_parameters();
  if (!start.empty()) fill(theta, start);
  auto history = gradsum::margin_history(Space(), model,
                                                      gradsum::BinaryCrossEntropy{}, theta, data);
  gradsum::FitOptions options;
  options.epochs = epochs;
  options.batch = 50;
  options.seed = 3;
  gradsum::fit(step, theta, data, options, history);
  CHECK(history.records() == epochs);
  if (accuracy)
    *accuracy = double(gradsum::count_correct(Space(), model, gradsum::BinaryCrossEntropy{},
                                              theta, data)) /
                double(f.p.n);
  const auto top = gradsum::suspect_rows(history, std::int64_t(f.flipped.size()));
  REQUIRE(top.size() == f.flipped.size());
  for (std::size_t i = 1; i < top.size(); ++i) CHECK(top[i - 1].score >= top[i].score);
  std::set<std::int64_t> rows;
  for (const auto& s : top) {
    rows.insert(s.row);
    CHECK(s.target == f.p.y[std::size_t(s.row)]);
  }
  return rows;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: the flipped labels of a linear rule rank first", Space,
                          suspects_linear) {
  const auto f = flipped_set(400, 20, 11, [](double a, double b) { return a + 0.5 * b; });
  const auto rows = suspects_after_training<Space>(f, gradsum::Linear(2), 0.05, 40);
  CHECK(rows == f.flipped);
}
TEST_CASE_TEMPLATE_APPLY(suspects_linear, Spaces);

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: the flipped labels of a circle rank first under an MLP",
                          Space, suspects_mlp) {
  // Inside the circle of radius 1.4 or not: no linear model fits it.
  const auto f = flipped_set(500, 20, 5, [](double a, double b) { return 1.96 - a * a - b * b; });
  const gradsum::MLP model(2, {16}, 1, gradsum::Activation::tanh);
  auto theta0 = random_vector(std::size_t(model.num_parameters()), 17, 0.5);
  const auto rows = suspects_after_training<Space>(f, model, 0.02, 150, theta0);
  std::int64_t found = 0;
  for (auto r : rows) found += f.flipped.count(r);
  INFO("flipped rows among the top 20: " << found);
  CHECK(found >= 19);
}
TEST_CASE_TEMPLATE_APPLY(suspects_mlp, Spaces);

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: an MLP that fits every flipped label still ranks them first",
                          Space, suspects_memorized) {
  // 200 rows of 6 features, 64 hidden units: enough to learn the 10 wrong
  // labels too; their margins averaged over training stay the lowest.
  const auto f = flipped_set(200, 10, 9, [](double a, double b) { return a - 0.5 * b; }, 6);
  const gradsum::MLP model(6, {64}, 1, gradsum::Activation::tanh);
  auto theta0 = random_vector(std::size_t(model.num_parameters()), 19, 0.5);
  double accuracy = 0;
  const auto rows = suspects_after_training<Space>(f, model, 0.01, 400, theta0, &accuracy);
  std::int64_t found = 0;
  for (auto r : rows) found += f.flipped.count(r);
  INFO("training accuracy " << accuracy << ", flipped rows among the top 10: " << found);
  CHECK(accuracy == 1.0);  // every wrong label learned
  CHECK(found >= 7);
}
TEST_CASE_TEMPLATE_APPLY(suspects_memorized, Spaces);

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: scores are minus the margin averaged over the records",
                          Space, suspects_margins) {
  // Softmax over 3 classes at two parameter vectors; the margin is worked
  // out here: z_y - max over c != y of z_c.
  const auto p = random_problem(9, 2, Kind::multiclass, 3, 21);
  const auto data = Data<Space>::from_host(p.n, p.d, p.x, p.y);
  const gradsum::Softmax model(2, 3);
  Kokkos::View<double*, typename Space::memory_space> theta("theta", 9);
  const std::vector<double> t1 = random_vector(9, 1), t2 = random_vector(9, 2);
  auto history = gradsum::margin_history(Space(), model,
                                                      gradsum::SoftmaxCrossEntropy{}, theta, data,
                                                      gradsum::RowRange{2, 8});
  fill(theta, t1);
  history.record();
  fill(theta, t2);
  history.record();
  auto margin = [&](const std::vector<double>& t, std::int64_t i, int* argmax) {
    double z[3];
    for (int c = 0; c < 3; ++c)
      z[c] = t[std::size_t(c * 3)] * p.x[std::size_t(2 * i)] +
             t[std::size_t(c * 3 + 1)] * p.x[std::size_t(2 * i + 1)] + t[std::size_t(c * 3 + 2)];
    const int y = int(p.y[std::size_t(i)]);
    double other = -1e300;
    for (int c = 0; c < 3; ++c)
      if (c != y) other = std::max(other, z[c]);
    if (argmax) *argmax = int(std::max_element(z, z + 3) - z);
    return z[y] - other;
  };
  const auto all = history.scores();
  REQUIRE(all.size() == 6);
  for (std::int64_t i = 2; i < 8; ++i) {
    int predicted = 0;
    const double expected = -(margin(t1, i, nullptr) + margin(t2, i, &predicted)) / 2;
    const auto& s = all[std::size_t(i - 2)];
    CHECK(s.row == i);
    CHECK(s.score == doctest::Approx(expected).epsilon(1e-12));
    CHECK(s.predicted == predicted);
    CHECK(s.target == p.y[std::size_t(i)]);
  }
  const auto top = gradsum::suspect_rows(history, 6);
  for (std::size_t i = 1; i < top.size(); ++i) CHECK(top[i - 1].score >= top[i].score);
  CHECK(gradsum::suspect_rows(history, 1)[0].row == top[0].row);
}
TEST_CASE_TEMPLATE_APPLY(suspects_margins, Spaces);

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: refusals name the argument and the value", Space,
                          suspects_refusals) {
  const auto p = random_problem(5, 2, Kind::binary, 2, 4);
  const auto data = Data<Space>::from_host(p.n, p.d, p.x, p.y);
  const gradsum::Linear model(2);
  Kokkos::View<double*, typename Space::memory_space> theta("theta", 3);
  auto history = gradsum::margin_history(Space(), model,
                                                      gradsum::BinaryCrossEntropy{}, theta, data);
  CHECK_THROWS_WITH_AS(gradsum::suspect_rows(history, 2),
                       "gradsum::suspect_rows: no margins recorded yet: pass the "
                       "MarginHistory to fit() as a callback or call record()",
                       gradsum::Error);
  history.record();
  CHECK_THROWS_WITH_AS(gradsum::suspect_rows(history, 0),
                       "gradsum::suspect_rows: k (suspects wanted) must be >= 1, "
                       "got 0",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::suspect_rows(history, 6),
                       "gradsum::suspect_rows: k (suspects wanted) is 6 but the "
                       "tracked rows hold 5 rows; ask for at most 5",
                       gradsum::Error);
  CHECK(gradsum::suspect_rows(history, 5).size() == 5);
  CHECK_THROWS_WITH_AS(gradsum::margin_history(Space(), model,
                                                            gradsum::BinaryCrossEntropy{}, theta,
                                                            data, gradsum::RowRange{3, 7}),
                       "gradsum::MarginHistory: rows [3, 7) are not within the "
                       "data's 5 rows",
                       gradsum::Error);
  Kokkos::View<double*, typename Space::memory_space> short_theta("theta", 2);
  CHECK_THROWS_WITH_AS(gradsum::margin_history(Space(), model,
                                                            gradsum::BinaryCrossEntropy{},
                                                            short_theta, data),
                       "gradsum::MarginHistory: theta has 2 entries but model "
                       "linear has 3 parameters",
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(suspects_refusals, Spaces);

TEST_CASE_TEMPLATE_DEFINE("suspect_rows: one logit and a regression, worked out by hand", Space,
                          suspects_one_output) {
  // z = 0.5 a - b + 0.25. Logistic: margin z for target 1, -z for 0.
  // Squared error: margin -(z - y)^2 / 2.
  const std::vector<double> x = {1, 2, -1, 0.5, 3, -2}, binary = {1, 0, 0},
                            real = {0.5, -3, 1};
  const std::vector<double> t = {0.5, -1, 0.25};
  const double z[3] = {0.5 - 2 + 0.25, -0.5 - 0.5 + 0.25, 1.5 + 2 + 0.25};
  Kokkos::View<double*, typename Space::memory_space> theta("theta", 3);
  fill(theta, t);
  const gradsum::Linear model(2);
  const auto logistic = Data<Space>::from_host(3, 2, x, binary);
  auto h1 = gradsum::margin_history(Space(), model, gradsum::BinaryCrossEntropy{},
                                                 theta, logistic);
  h1.record();
  const auto s1 = h1.scores();
  CHECK(s1[0].score == doctest::Approx(-z[0]));
  CHECK(s1[1].score == doctest::Approx(z[1]));
  CHECK(s1[2].score == doctest::Approx(z[2]));
  CHECK(s1[0].predicted == 0);  // z < 0
  CHECK(s1[2].predicted == 1);
  const auto regression = Data<Space>::from_host(3, 2, x, real);
  auto h2 = gradsum::margin_history(Space(), model, gradsum::SquaredError{}, theta,
                                                 regression);
  h2.record();
  const auto s2 = h2.scores();
  for (int i = 0; i < 3; ++i) {
    CHECK(s2[std::size_t(i)].score == doctest::Approx((z[i] - real[std::size_t(i)]) *
                                                      (z[i] - real[std::size_t(i)]) / 2));
    CHECK(s2[std::size_t(i)].predicted == doctest::Approx(z[i]));
  }
  // The largest error first: row 2 (z = 3.75 against 1), then row 1.
  const auto top = gradsum::suspect_rows(h2, 2);
  CHECK(top[0].row == 2);
  CHECK(top[1].row == 1);
}
TEST_CASE_TEMPLATE_APPLY(suspects_one_output, Spaces);
