// SPDX-License-Identifier: Apache-2.0
// Quick start: the gradient of a mini-batch is the sum of its parts'
// gradients; then train linear regression by gradient descent.
#include <gradsum/gradsum.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;

  // Eight samples of y = 2 x0 - x1 + 1.
  std::vector<double> x, y;
  for (int i = 0; i < 8; ++i) {
    x.push_back(0.5 * i);
    x.push_back(i % 3);
    y.push_back(2 * x[2 * i] - x[2 * i + 1] + 1);
  }
  auto data = gradsum::Dataset<double>::from_host(8, 2, x, y);

  // Model, loss and optimizer are policies; the step composes them.
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(2),
                                         gradsum::SquaredError{},
                                         gradsum::SGD{0.1});
  auto theta = step.make_parameters();  // zeros: w0, w1, bias

  // Two workers holding 5 and 3 samples: their gradients add up to the
  // gradient of the whole batch (the mean divides once, by all 8 samples).
  double parts[3] = {0, 0, 0};
  for (auto rows : {gradsum::RowRange{0, 5}, gradsum::RowRange{5, 8}}) {
    step.evaluate(theta, data, rows);
    auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.sums());
    for (int j = 0; j < 3; ++j) parts[j] += sums(j) / 8;
  }
  step.evaluate(theta, data);
  auto whole = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
  std::printf("sum of parts: %.6f %.6f %.6f\n", parts[0], parts[1], parts[2]);
  std::printf("whole batch:  %.6f %.6f %.6f\n", whole(0), whole(1), whole(2));

  // Full-batch gradient descent.
  gradsum::StepResult result;
  for (int epoch = 0; epoch < 2000; ++epoch) result = step(theta, data);
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  std::printf("loss %.3g, gradient norm %.3g\n", result.loss, result.gradient_norm);
  std::printf("y = %.4f x0 + %.4f x1 + %.4f\n", w(0), w(1), w(2));
  return 0;
}
