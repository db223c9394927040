// SPDX-License-Identifier: Apache-2.0
// Mini-batch statistics and the gradient noise scale. Expected values: the
// closed-form per-sample gradient covariance of least squares on Gaussian
// data, the definition of the moving average, and the behaviour of SGD on
// real data (breast cancer).

#include "test_helpers.hpp"

#include <gradsum/train/running_averages.hpp>
#include <gradsum/train/fit.hpp>

#include <filesystem>
#include <random>

using namespace gradsum_test;

namespace {

using Space = Kokkos::DefaultHostExecutionSpace;

/// y = x . w* + eps with x ~ N(0, I_d), eps ~ N(0, sigma^2), w* = 0, bias 0.
template <class Memory = Space::memory_space>
gradsum::Dataset<double, Memory> gaussian_regression(std::int64_t n, int d, double sigma,
                                                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(static_cast<std::size_t>(n * d)), y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < d; ++j) x[std::size_t(i) * d + j] = normal(rng);
    y[std::size_t(i)] = sigma * normal(rng);
  }
  return gradsum::Dataset<double, Memory>::from_host(n, d, x, y);
}

}  // namespace

TEST_CASE("the moving average weighs values by decay^age, normalised") {
  gradsum::MovingAverage a(0.5);
  CHECK(std::isnan(a.value()));
  a.add(4.0);
  CHECK(a.value() == 4.0);  // one value: itself, not pulled towards zero
  a.add(std::nan(""));      // ignored
  a.add(1.0);
  CHECK(a.value() == doctest::Approx((0.5 * 4.0 + 1.0) / 1.5).epsilon(1e-15));
  gradsum::MovingAverage last(0.0);
  last.add(3.0);
  last.add(7.0);
  CHECK(last.value() == 7.0);
  std::vector<double> state;
  a.save_state(state);
  gradsum::MovingAverage b(0.5);
  std::size_t at = 0;
  b.restore_state(state, at);
  CHECK(at == 2);
  CHECK(b.value() == a.value());
  CHECK_THROWS_WITH(gradsum::MovingAverage(1.0),
                    "gradsum::MovingAverage: decay must be in [0, 1), got 1");
}

TEST_CASE_TEMPLATE_DEFINE("the noise scale of least squares on Gaussian data is within 10% of "
                          "its closed form",
                          Backend, closed_form) {
  // Per-sample gradient of (x.w + b - y)^2 / 2 at w = delta, b = 0 (the
  // truth is w* = 0, b* = 0): g = r (x, 1) with r = x.delta - eps. For
  // x ~ N(0, I_d): E[g] = (delta, 0), so ||G||^2 = ||delta||^2, and
  // E||g||^2 = E[r^2 ||x||^2] + E[r^2] = (d + 2)||delta||^2 + d sigma^2
  // + ||delta||^2 + sigma^2, so tr(Sigma) = E||g||^2 - ||G||^2
  // = (d + 2)||delta||^2 + (d + 1) sigma^2.
  const int d = 4;
  const double sigma = 1.0;
  const std::vector<double> delta = {0.5, -0.5, 0.5, -0.5, 0.0};  // ||delta||^2 = 1, bias 0
  const double g2 = 1.0, trace = (d + 2) * g2 + (d + 1) * sigma * sigma;  // 11
  const std::int64_t B = 64, batches = 1000;
  const auto data =
      gaussian_regression<typename Backend::memory_space>(B * batches, d, sigma, 2024);
  auto step = gradsum::make_step<double>(Backend(), gradsum::Linear(d), gradsum::SquaredError{});
  step.measure_workers(8);  // 8 workers of 8 samples per batch
  const auto theta = step.make_parameters();
  {
    auto host = Kokkos::create_mirror_view(theta);
    for (int j = 0; j <= d; ++j) host(j) = delta[std::size_t(j)];
    Kokkos::deep_copy(theta, host);
  }
  double trace_sum = 0, g2_sum = 0;
  gradsum::NoiseScale smoothed(0.99);
  for (std::int64_t b = 0; b < batches; ++b) {
    const auto r = step.evaluate(theta, data, gradsum::RowRange{b * B, (b + 1) * B});
    REQUIRE(r.workers == 8);
    trace_sum += r.noise_trace;
    g2_sum += r.gradient_norm2_estimate;
    smoothed.add(r);
  }
  const double trace_mean = trace_sum / double(batches), g2_mean = g2_sum / double(batches);
  MESSAGE("tr(Sigma) " << trace_mean << " (closed form " << trace << "), ||G||^2 " << g2_mean
                       << " (" << g2 << "), B_noise " << trace_mean / g2_mean << " ("
                       << trace / g2 << "), moving average " << smoothed.value());
  CHECK(std::fabs(trace_mean - trace) <= 0.1 * trace);
  CHECK(std::fabs(g2_mean - g2) <= 0.1 * g2);
  CHECK(std::fabs(trace_mean / g2_mean - trace / g2) <= 0.1 * trace / g2);
  // The moving average covers about the last hundred batches: looser.
  CHECK(std::fabs(smoothed.value() - trace / g2) <= 0.3 * trace / g2);
}
TEST_CASE_TEMPLATE_APPLY(closed_form, Spaces);

TEST_CASE("worker statistics with an L2 term or in float, which take a pass of their own, "
          "agree with the plain ones") {
  // In double without an L2 term the statistics come from the step's own
  // ||g||^2; with one, or in float, from a pass over the sums.
  const int d = 4;
  const std::int64_t n = 96;
  const auto p = random_problem(n, d, Kind::regression, 1, 71);
  const std::vector<double> w = {0.5, -0.5, 0.5, -0.5, 0.25};
  auto measure = [&](auto zero, double l2) {
    using S = decltype(zero);
    auto step = gradsum::make_step<S>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                      gradsum::SGD{}, gradsum::Objective{l2});
    step.measure_workers(4);
    auto theta = step.make_parameters();
    step.copy_from_host(w, theta);
    const auto r =
        step.evaluate(theta, gradsum::Dataset<S, Space::memory_space>::from_host(n, d, p.x, p.y));
    std::vector<double> g;
    step.copy_to_host(step.gradient(), g);
    return std::make_pair(r, g);
  };
  const auto plain = measure(0.0, 0.0), with_l2 = measure(0.0, 0.3), single = measure(0.0f, 0.0);
  REQUIRE(plain.first.workers == 4);
  REQUIRE(plain.first.noise_trace > 0);
  MESSAGE("noise trace " << plain.first.noise_trace << ", with L2 " << with_l2.first.noise_trace
                         << ", float " << single.first.noise_trace);
  // The noise does not depend on the L2 term.
  CHECK(with_l2.first.noise_trace == doctest::Approx(plain.first.noise_trace).epsilon(1e-12));
  CHECK(single.first.noise_trace == doctest::Approx(plain.first.noise_trace).epsilon(1e-4));
  // ||G + l2 w||^2 - ||G||^2 = 2 l2 G . w + l2^2 ||w||^2 over the
  // regularised parameters, G = S / B the plain step's gradient.
  double cross = 0, w2 = 0;
  for (int j = 0; j <= d; ++j)
    if (gradsum::Linear(d).is_regularized(j)) {
      cross += plain.second[std::size_t(j)] * w[std::size_t(j)];
      w2 += w[std::size_t(j)] * w[std::size_t(j)];
    }
  CHECK(with_l2.first.gradient_norm2_estimate - plain.first.gradient_norm2_estimate ==
        doctest::Approx(2 * 0.3 * cross + 0.3 * 0.3 * w2).epsilon(1e-10));
  CHECK(single.first.gradient_norm2_estimate ==
        doctest::Approx(plain.first.gradient_norm2_estimate).epsilon(1e-4));
}

TEST_CASE("a measured or watched step reports a non-finite sum as the plain step does") {
  // A measured worker's finite norm and loss stand for its P + 1 sums
  // being finite; otherwise the step looks at every sum, as unmeasured.
  auto message = [](int parts, bool watch, const auto& data, auto loss, std::vector<double> w) {
    auto step = gradsum::make_step<double>(Space(), gradsum::Linear(2), loss);
    if (watch) step.watch_workers(parts);
    else if (parts > 0) step.measure_workers(parts);
    auto theta = step.make_parameters();
    step.copy_from_host(w, theta);
    try {
      step.evaluate(theta, data);
    } catch (const gradsum::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Row 2's z = w . x overflows: the sample is named.
  const auto overflow =
      gradsum::Dataset<double, Space::memory_space>::from_host(4, 2, {1, 2, 3, 4, 1e308, 1e308, 5, 6},
                                                               {0, 1, 1, 0});
  const std::string named = message(0, false, overflow, gradsum::BinaryCrossEntropy{}, {10, 10, 0});
  CHECK(named.find("not finite for sample 2 of the selected rows") != std::string::npos);
  for (int parts : {1, 2})
    CHECK(message(parts, false, overflow, gradsum::BinaryCrossEntropy{}, {10, 10, 0}) == named);
  CHECK(message(3, true, overflow, gradsum::BinaryCrossEntropy{}, {10, 10, 0}) == named);
  // Finite sums whose squares overflow: a worker's norm is infinite, its
  // sums are not, and the step fails only after the sum, as unmeasured.
  const auto huge = gradsum::Dataset<double, Space::memory_space>::from_host(
      3, 2, {1e200, 1e200, 1e200, 1e200, 1e200, 1e200}, {1, 1, 1});
  const std::string late = message(0, false, huge, gradsum::SquaredError{}, {0, 0, 0});
  CHECK(late.find("not finite after summing over workers") != std::string::npos);
  CHECK(message(1, false, huge, gradsum::SquaredError{}, {0, 0, 0}) == late);
  CHECK(message(3, true, huge, gradsum::SquaredError{}, {0, 0, 0}) == late);
}

TEST_CASE("worker statistics: one worker measures no noise, parts are workers, misuse is named") {
  const DataOn<Space> data = gaussian_regression(96, 3, 1.0, 7);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(3), gradsum::SquaredError{});
  const auto theta = step.make_parameters();
  const auto off = step.evaluate(theta, data);
  CHECK(off.workers == 0);
  CHECK(std::isnan(off.noise_trace));
  step.measure_workers(1);
  const auto one = step.evaluate(theta, data);
  CHECK(one.workers == 1);
  CHECK(std::isnan(one.noise_trace));
  CHECK(std::isnan(one.worker_loss_spread));
  // The same batch as 3 micro-batches or as 3 parts: the same workers.
  step.measure_workers(3);
  const auto parts = step.evaluate(theta, data);
  step.measure_workers(1);
  gradsum::MicroBatches<gradsum::RowRange> micro;
  for (int k = 0; k < 3; ++k) micro.parts.push_back(gradsum::partition(96, 3, k));
  const auto batches = step.evaluate(theta, data, micro);
  CHECK(parts.workers == 3);
  CHECK(batches.workers == 3);
  CHECK(parts.noise_trace == doctest::Approx(batches.noise_trace).epsilon(1e-12));
  // The spread of the three workers' mean losses, from its definition.
  std::vector<double> losses;
  for (int k = 0; k < 3; ++k) {
    gradsum::MicroBatches<gradsum::RowRange> single;
    single.parts.push_back(gradsum::partition(96, 3, k));
    losses.push_back(step.evaluate(theta, data, single).loss);
  }
  const double mean = (losses[0] + losses[1] + losses[2]) / 3;
  double var = 0;
  for (double l : losses) var += (l - mean) * (l - mean) / 2;
  CHECK(parts.worker_loss_spread == doctest::Approx(std::sqrt(var)).epsilon(1e-10));
  // Sizes that do not divide: workers without samples are not counted.
  step.measure_workers(5);
  CHECK(step.evaluate(theta, data, gradsum::RowRange{0, 3}).workers == 3);

  CHECK_THROWS_WITH(step.measure_workers(-1),
                    "gradsum::Step::measure_workers: parts_per_rank must be in [0, 2^20], got -1");
  auto median = gradsum::make_step<double>(
      Space(), gradsum::Linear(3), gradsum::SquaredError{}, gradsum::SGD{}, gradsum::Objective{},
      gradsum::VirtualWorkers<>{gradsum::CoordinateMedian{}, 3});
  CHECK_THROWS_WITH(median.measure_workers(2),
                    doctest::Contains("does not sum their gradients"));
  auto reproducible = gradsum::make_step<double>(
      Space(), gradsum::Linear(3), gradsum::SquaredError{}, gradsum::SGD{}, gradsum::Objective{},
      gradsum::Analytic{}, gradsum::Reproducible{});
  CHECK_THROWS_WITH(reproducible.measure_workers(2),
                    doctest::Contains("the reproducible reduction aggregates integer bins"));
}

TEST_CASE("breast cancer: SGD's mini-batch loss jumps around while its average and the training "
          "loss fall") {
  const std::string path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    MESSAGE("skipped: " << path << " is absent");
    return;
  }
  gradsum::Table table = gradsum::read_csv(path);
  gradsum::StandardScaler::fit(table).transform(table);
  const DataOn<Space> data = DataOn<Space>::from_host(std::int64_t(table.num_rows), int(table.num_features),
                                    table.features, table.targets);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(30),
                                         gradsum::BinaryCrossEntropy{}, gradsum::SGD{0.05});
  step.measure_workers(4);
  const auto theta = step.make_parameters();

  struct Record : gradsum::Callback {
    std::vector<double> batch, average, epoch, spread, noise;
    void on_step(gradsum::FitState& s) override {
      batch.push_back(s.result.loss);
      spread.push_back(s.result.worker_loss_spread);
    }
    void on_epoch(gradsum::FitState& s) override {
      average.push_back(s.loss_average);
      epoch.push_back(s.epoch_result.loss);
      noise.push_back(s.noise_scale);
    }
  } record;
  gradsum::FitOptions options;
  options.epochs = 6;
  options.batch = 32;
  options.seed = 5;
  gradsum::fit(step, theta, data, options, record);

  std::size_t rises = 0;
  for (std::size_t k = 1; k < record.batch.size(); ++k) rises += record.batch[k] > record.batch[k - 1];
  MESSAGE(rises << " of " << record.batch.size() - 1 << " updates raised the mini-batch loss");
  CHECK(rises >= 10);  // not monotone: many mini-batches are worse than the one before
  for (std::size_t e = 1; e < record.epoch.size(); ++e) {
    CAPTURE(e);
    CHECK(record.epoch[e] < record.epoch[e - 1]);      // the training loss falls
    CHECK(record.average[e] < record.average[e - 1]);  // so does the mini-batch average
  }
  // At theta = 0 every sample's loss is ln 2, so the workers agree; after
  // that, four workers' mean losses differ.
  CHECK(record.spread[0] <= 1e-12);
  for (std::size_t k = 1; k < record.spread.size(); ++k) CHECK(record.spread[k] > 0);
  for (double b : record.noise) CHECK(std::isfinite(b));
  MESSAGE("noise scale after each epoch: " << record.noise[0] << " … " << record.noise.back());
}
