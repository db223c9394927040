// SPDX-License-Identifier: Apache-2.0
// Your own model: y = a exp(b x) + c, written as a gradsum Model
// (own_model.hpp), checked with check_model, then fitted to noisy samples of known (a, b, c) with
// L-BFGS. Exits with status 1 if check_model fails or a fitted parameter
// is off by more than the tolerance below.
#include "own_model.hpp"

#include <gradsum/gradsum.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const Exponential model;

  // 1. Check the model before training it.
  const auto report = gradsum::check_model(Space(), model, gradsum::SquaredError{});
  std::cout << report << "\n";
  if (!report.passed) return 1;

  // 2. 400 samples of y = 1.5 exp(0.8 x) - 0.5 plus noise (sd 0.01), x in [-1, 2].
  const double truth[3] = {1.5, 0.8, -0.5};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 2.0);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> x, y;
  for (int i = 0; i < 400; ++i) {
    x.push_back(uniform(rng));
    y.push_back(truth[0] * std::exp(truth[1] * x.back()) + truth[2] + noise(rng));
  }
  const auto data = gradsum::Dataset<double>::from_host(400, 1, x, y);

  // 3. Full-batch L-BFGS on the mean squared error, from (1, 0, 0).
  auto step = gradsum::make_step<double>(Space(), model, gradsum::SquaredError{},
                                         gradsum::LBFGS{});
  auto theta = step.make_parameters();
  Kokkos::deep_copy(Kokkos::subview(theta, 0), 1.0);
  gradsum::FitOptions options;
  options.epochs = 200;  // one update per epoch at full batch
  options.stopping.grad_tol = 1e-9;
  const auto fitted = gradsum::fit(step, theta, data, options);
  std::printf("stopped after %lld updates: objective %.6g, gradient norm %.3g\n",
              static_cast<long long>(fitted.position.step), fitted.last.loss,
              fitted.last.gradient_norm);

  // 4. The fitted parameters must be the generating ones, to the noise.
  const double tolerance = 0.02;
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  const char* names[3] = {"a", "b", "c"};
  int off = 0;
  for (int j = 0; j < 3; ++j) {
    const bool ok = std::fabs(w(j) - truth[j]) <= tolerance;
    std::printf("%s = %.4f (generated with %.4f)%s\n", names[j], w(j), truth[j],
                ok ? "" : "  <- off by more than the tolerance");
    off += ok ? 0 : 1;
  }
  std::printf("tolerance %.2g: %s\n", tolerance, off == 0 ? "recovered" : "NOT recovered");
  return off == 0 ? 0 : 1;
}
