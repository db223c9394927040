// SPDX-License-Identifier: Apache-2.0
// predict, predict_classes, predict_probabilities and the metrics
// (accuracy, mean_loss), against forwards, argmaxes, softmaxes and losses
// written out on the host in this file.

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>

using namespace gradsum_test;

namespace {

// Host outputs of the multinomial linear model (Softmax, or Linear for
// k = 1): z_c = sum_j theta[c (d + 1) + j] x_j + theta[c (d + 1) + d].
std::vector<double> host_linear(const HostProblem& p, int k, const std::vector<double>& theta) {
  std::vector<double> z(std::size_t(p.n) * k);
  for (std::int64_t i = 0; i < p.n; ++i)
    for (int c = 0; c < k; ++c) {
      long double s = theta[std::size_t(c * (p.d + 1) + p.d)];
      for (int j = 0; j < p.d; ++j)
        s += (long double)theta[std::size_t(c * (p.d + 1) + j)] * p.x[std::size_t(i * p.d + j)];
      z[std::size_t(i * k + c)] = double(s);
    }
  return z;
}

// Host outputs of a one-hidden-layer tanh MLP: W_1 (d x h, row-major),
// b_1, W_2 (h x k), b_2, in that order.
std::vector<double> host_mlp(const HostProblem& p, int h, int k, const std::vector<double>& theta) {
  const std::size_t d = std::size_t(p.d);
  const double* w1 = theta.data();
  const double* b1 = w1 + d * h;
  const double* w2 = b1 + h;
  const double* b2 = w2 + std::size_t(h) * k;
  std::vector<double> z(std::size_t(p.n) * k), a(std::size_t(h), 0.0);
  for (std::int64_t i = 0; i < p.n; ++i) {
    for (int u = 0; u < h; ++u) {
      long double s = b1[u];
      for (std::size_t j = 0; j < d; ++j) s += (long double)p.x[i * d + j] * w1[j * h + u];
      a[std::size_t(u)] = std::tanh(double(s));
    }
    for (int c = 0; c < k; ++c) {
      long double s = b2[c];
      for (int u = 0; u < h; ++u) s += (long double)a[std::size_t(u)] * w2[u * k + c];
      z[std::size_t(i * k + c)] = double(s);
    }
  }
  return z;
}

template <class Memory>
Kokkos::View<double*, Memory> device_vector(const std::vector<double>& v) {
  Kokkos::View<double*, Memory> out("theta", v.size());
  fill(out, v);
  return out;
}

template <class Out>
std::vector<double> flat(const Out& out) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  std::vector<double> v;
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t c = 0; c < h.extent(1); ++c) v.push_back(double(h(i, c)));
  return v;
}

int host_argmax(const std::vector<double>& z, std::int64_t i, int k) {
  int best = 0;
  for (int c = 1; c < k; ++c)
    if (z[std::size_t(i * k + c)] > z[std::size_t(i * k + best)]) best = c;
  return best;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("predict: outputs, classes and probabilities of linear models", Space,
                          predict_linear) {
  using Memory = typename Space::memory_space;
  using Data = gradsum::Dataset<double, Memory>;
  const auto p = random_problem(37, 4, Kind::multiclass, 3, 21);
  const auto data = Data::from_host(p.n, p.d, p.x, p.y);
  const Space space;

  // Softmax: scores, argmax classes, softmax probabilities.
  const auto theta_values = random_vector(3 * 5, 8);
  const auto theta = device_vector<Memory>(theta_values);
  const auto expected = host_linear(p, 3, theta_values);
  Kokkos::View<double**, Memory> out("out", p.n, 3);
  gradsum::predict(space, gradsum::Softmax(4, 3), theta, data.features(), out);
  CHECK(relative_distance(flat(out), expected, expected.size()) <= 1e-14);
  Kokkos::View<int*, Memory> classes("classes", p.n);
  gradsum::predict_classes(space, gradsum::Softmax(4, 3), gradsum::SoftmaxCrossEntropy{}, theta,
                           data.features(), classes);
  const auto host_classes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), classes);
  Kokkos::View<double**, Memory> prob("prob", p.n, 3);
  gradsum::predict_probabilities(space, gradsum::Softmax(4, 3), gradsum::SoftmaxCrossEntropy{},
                                 theta, data.features(), prob);
  const auto probabilities = flat(prob);
  for (std::int64_t i = 0; i < p.n; ++i) {
    CHECK(host_classes(i) == host_argmax(expected, i, 3));
    double total = 0;
    for (int c = 0; c < 3; ++c) total += std::exp(expected[std::size_t(i * 3 + c)]);
    for (int c = 0; c < 3; ++c)
      CHECK(probabilities[std::size_t(i * 3 + c)] ==
            doctest::Approx(std::exp(expected[std::size_t(i * 3 + c)]) / total).epsilon(1e-13));
  }

  // Logistic regression (Linear with the binary loss): class z > 0, and
  // the probability of class 1, 1 / (1 + e^-z).
  const auto w_values = random_vector(5, 9);
  const auto w = device_vector<Memory>(w_values);
  const auto logits = host_linear(p, 1, w_values);
  Kokkos::View<double*, Memory> labels("labels", p.n);
  Kokkos::View<double**, Kokkos::LayoutLeft, Memory> p1("p1", p.n, 1);  // any layout of out
  gradsum::predict_classes(space, gradsum::Linear(4), gradsum::BinaryCrossEntropy{}, w,
                           data.features(), labels);
  gradsum::predict_probabilities(space, gradsum::Linear(4), gradsum::BinaryCrossEntropy{}, w,
                                 data.features(), p1);
  const auto host_labels = to_host(labels);
  const auto host_p1 = flat(p1);
  for (std::int64_t i = 0; i < p.n; ++i) {
    CHECK(host_labels[std::size_t(i)] == (logits[std::size_t(i)] > 0 ? 1.0 : 0.0));
    CHECK(host_p1[std::size_t(i)] ==
          doctest::Approx(1 / (1 + std::exp(-logits[std::size_t(i)]))).epsilon(1e-13));
  }

  // The features of a wider table (strided, wrapped without copy) give
  // the same outputs; so does the default-space overload.
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> table("table", p.n, p.d + 1);
  Kokkos::deep_copy(Kokkos::subview(table, Kokkos::ALL(), Kokkos::make_pair(0, p.d)),
                    data.features());
  const auto wrapped = Data::from_table(table, p.d);
  Kokkos::View<double**, Memory> again("again", p.n, 3);
  gradsum::predict(space, gradsum::Softmax(4, 3), theta, wrapped.features(), again);
  CHECK(flat(again) == flat(out));
  if constexpr (std::is_same<Space, Kokkos::DefaultExecutionSpace>::value) {
    Kokkos::deep_copy(again, 0.0);
    gradsum::predict(gradsum::Softmax(4, 3), theta, data.features(), again);
    CHECK(flat(again) == flat(out));
  }
}
TEST_CASE_TEMPLATE_APPLY(predict_linear, Spaces);

TEST_CASE_TEMPLATE_DEFINE("predict: an MLP beyond the per-sample limits, layer by layer", Space,
                          predict_wide) {
  using Memory = typename Space::memory_space;
  // More rows than one panel of the layer-wise path holds (2048 here).
  const auto p = random_problem(2600, 5, Kind::multiclass, 3, 4);
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  for (int hidden : {300, 20}) {
    CAPTURE(hidden);
    const gradsum::MLP net(5, {hidden}, 3, gradsum::Activation::tanh);
    CHECK(net.per_sample_limits().empty() == (hidden <= gradsum::MLP::max_width));
    const auto theta_values = random_vector(std::size_t(net.num_parameters()), 13, 0.3);
    const auto theta = device_vector<Memory>(theta_values);
    const auto expected = host_mlp(p, hidden, 3, theta_values);
    Kokkos::View<double**, Memory> out("out", p.n, 3);
    gradsum::predict(Space(), net, theta, data.features(), out);
    CHECK(relative_distance(flat(out), expected, expected.size()) <= 1e-13);
    // Metrics through the same path: accuracy and mean loss by hand.
    double correct = 0, loss = 0;
    for (std::int64_t i = 0; i < p.n; ++i) {
      correct += host_argmax(expected, i, 3) == int(p.y[std::size_t(i)]) ? 1 : 0;
      double m = expected[std::size_t(i * 3)];
      for (int c = 1; c < 3; ++c) m = std::max(m, expected[std::size_t(i * 3 + c)]);
      double s = 0;
      for (int c = 0; c < 3; ++c) s += std::exp(expected[std::size_t(i * 3 + c)] - m);
      loss += m + std::log(s) - expected[std::size_t(i * 3 + int(p.y[std::size_t(i)]))];
    }
    CHECK(gradsum::accuracy(Space(), net, gradsum::SoftmaxCrossEntropy{}, theta, data) ==
          doctest::Approx(correct / double(p.n)).epsilon(1e-15));
    CHECK(gradsum::mean_loss(Space(), net, gradsum::SoftmaxCrossEntropy{}, theta, data) ==
          doctest::Approx(loss / double(p.n)).epsilon(1e-12));
  }
}
TEST_CASE_TEMPLATE_APPLY(predict_wide, Spaces);

TEST_CASE_TEMPLATE_DEFINE("accuracy and mean_loss equal the host's, with an objective", Space,
                          metrics) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(29, 3, Kind::regression, 1, 6);
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  const auto theta_values = random_vector(4, 2);
  const auto theta = device_vector<Memory>(theta_values);
  const auto z = host_linear(p, 1, theta_values);
  double squares = 0;
  for (std::int64_t i = 0; i < p.n; ++i)
    squares += 0.5 * (z[std::size_t(i)] - p.y[std::size_t(i)]) * (z[std::size_t(i)] - p.y[std::size_t(i)]);
  double weights = 0;  // the bias (last) is not regularised
  for (int j = 0; j < 3; ++j) weights += theta_values[std::size_t(j)] * theta_values[std::size_t(j)];
  const gradsum::Linear model(3);
  const gradsum::SquaredError loss;
  CHECK(gradsum::mean_loss(Space(), model, loss, theta, data) ==
        doctest::Approx(squares / double(p.n)).epsilon(1e-13));
  CHECK(gradsum::mean_loss(Space(), model, loss, theta, data, gradsum::Objective{0.3}) ==
        doctest::Approx(squares / double(p.n) + 0.15 * weights).epsilon(1e-13));
  CHECK(gradsum::mean_loss(Space(), model, loss, theta, data, gradsum::Objective{0.0, false}) ==
        doctest::Approx(squares).epsilon(1e-13));
  // The step reports the same objective at the same parameters.
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.3});
  CHECK(step.evaluate(theta, data).loss ==
        doctest::Approx(gradsum::mean_loss(Space(), model, loss, theta, data,
                                           gradsum::Objective{0.3}))
            .epsilon(1e-13));

  // Classifier: accuracy against the host's labels.
  const auto b = random_problem(31, 3, Kind::binary, 2, 7);
  const auto binary = gradsum::Dataset<double, Memory>::from_host(b.n, b.d, b.x, b.y);
  const auto logits = host_linear(b, 1, theta_values);
  double correct = 0;
  for (std::int64_t i = 0; i < b.n; ++i)
    correct += (logits[std::size_t(i)] > 0 ? 1.0 : 0.0) == b.y[std::size_t(i)] ? 1 : 0;
  CHECK(gradsum::accuracy(Space(), model, gradsum::BinaryCrossEntropy{}, theta, binary) ==
        doctest::Approx(correct / double(b.n)).epsilon(1e-15));
  CHECK(gradsum::count_correct(Space(), model, gradsum::BinaryCrossEntropy{}, theta, binary) ==
        std::int64_t(correct));
}
TEST_CASE_TEMPLATE_APPLY(metrics, Spaces);

TEST_CASE_TEMPLATE_DEFINE("predict and the metrics refuse what does not fit, by name", Space,
                          predict_refusals) {
  using Memory = typename Space::memory_space;
  using Data = gradsum::Dataset<double, Memory>;
  const auto p = random_problem(6, 2, Kind::multiclass, 3, 1);
  auto y = p.y;
  y[4] = 5;  // a class the three outputs do not have
  const auto data = Data::from_host(p.n, p.d, p.x, y);
  const gradsum::Softmax model(2, 3);
  const gradsum::SoftmaxCrossEntropy loss;
  const auto theta = device_vector<Memory>(random_vector(9, 1));
  Kokkos::View<double**, Memory> out("out", 6, 3), narrow("narrow", 6, 2);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> x3("x3", 6, 3);
  CHECK_THROWS_WITH_AS(gradsum::predict(Space(), model, theta, x3, out),
                       "gradsum::predict: the features have 3 columns but model softmax expects 2",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::predict(Space(), model, theta, data.features(), narrow),
                       "gradsum::predict: out has 6 rows and 2 columns; expected 6 and 3 (a row "
                       "per row of the features, a column per model output)",
                       gradsum::Error);
  const auto short_theta = device_vector<Memory>(random_vector(8, 1));
  CHECK_THROWS_WITH_AS(gradsum::predict(Space(), model, short_theta, data.features(), out),
                       "gradsum::predict: theta has 8 entries but model softmax has 9 parameters",
                       gradsum::Error);
  Kokkos::View<int*, Memory> five("five", 5);
  CHECK_THROWS_WITH_AS(
      gradsum::predict_classes(Space(), model, loss, theta, data.features(), five),
      "gradsum::predict_classes: classes has 5 rows; expected 6 (a row per row of the features)",
      gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::mean_loss(Space(), model, loss, theta, data),
                       "gradsum::mean_loss: 1 row(s) of the data have a target the loss "
                       "softmax_cross_entropy rejects for 3 output(s)",
                       gradsum::Error);
  const auto empty = Data::from_host(0, 2, {}, {});
  CHECK_THROWS_WITH_AS(gradsum::accuracy(Space(), model, loss, theta, empty),
                       "gradsum::accuracy: the data hold no rows", gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::mean_loss(Space(), model, loss, theta, empty),
                       "gradsum::mean_loss: no rows of the data (a mean over none is undefined)",
                       gradsum::Error);
  CHECK(gradsum::mean_loss(Space(), model, loss, theta, empty, gradsum::Objective{0, false}) == 0);
  const auto wide = Data::from_host(1, 3, {1, 2, 3}, {0});
  CHECK_THROWS_WITH_AS(gradsum::count_correct(Space(), model, loss, theta, wide),
                       "gradsum::count_correct: the data have 3 features but model softmax "
                       "expects 2",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::accuracy(Space(), model, loss, short_theta, data),
                       "gradsum::accuracy: theta has 8 entries but model softmax has 9 parameters",
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(predict_refusals, Spaces);
