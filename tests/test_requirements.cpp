// SPDX-License-Identifier: Apache-2.0
// Compile-time checks of the requirement traits with minimal and broken
// fake policies. Everything here is decided by the compiler.

#include "fake_models.hpp"

#include <gradsum/gradsum.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

// A named namespace: the broken fakes are only looked at by the traits, and
// in an unnamed one nvcc warns that their members are never referenced.
namespace fakes {

struct ModelWithoutBackward {
  static const char* name() { return "broken"; }
  int num_features() const { return 1; }
  int num_outputs() const { return 1; }
  int num_parameters() const { return 1; }
  bool is_regularized(int) const { return true; }
  template <class S>
  void forward(const S*, const S*, S*) const {}
};

// Forward and backward but no hessian(): Newton's static_assert, and the
// exact line search's run-time refusal.
struct ModelWithoutHessian : MinimalModel {};

struct LossWithoutDerivative {
  static const char* name() { return "broken"; }
  static bool supports_outputs(int) { return true; }
  template <class S>
  static bool is_valid_target(S, int) { return true; }
  template <class S>
  static S value(const S*, int, S) { return 0; }
};

struct OptimizerWithoutStateSize {
  static const char* name() { return "broken"; }
  void validate() const {}
  template <class S, class M>
  void allocate(int) {}
};

}  // namespace fakes

using fakes::LossWithoutDerivative;
using fakes::ForwardOnlyModel;
using fakes::MinimalModel;
using fakes::ModelWithoutHessian;
using fakes::ModelWithoutBackward;
using fakes::OptimizerWithoutStateSize;

static_assert(gradsum::is_model_v<gradsum::Linear>);
static_assert(gradsum::is_model_v<gradsum::Softmax, float>);
static_assert(gradsum::is_model_v<MinimalModel>);
static_assert(!gradsum::is_model_v<ModelWithoutBackward>);
static_assert(gradsum::detail::has_forward<ModelWithoutBackward, double>::value);
static_assert(!gradsum::detail::has_backward<ModelWithoutBackward, double>::value);
static_assert(!gradsum::is_model_v<int>);
// The contract without backward: what CentralDifference needs.
static_assert(gradsum::is_forward_model_v<ModelWithoutBackward>);
static_assert(gradsum::is_forward_model_v<ForwardOnlyModel>);
static_assert(gradsum::is_forward_model_v<gradsum::Linear>);
static_assert(!gradsum::is_model_v<ForwardOnlyModel>);
static_assert(!gradsum::is_forward_model_v<int>);
// Which gradient policies call backward(): Analytic, and a wrapper of it.
static_assert(gradsum::detail::gradient_needs_backward<gradsum::Analytic>());
static_assert(!gradsum::detail::gradient_needs_backward<gradsum::CentralDifference>());
static_assert(gradsum::detail::gradient_needs_backward<gradsum::VirtualWorkers<>>());
static_assert(
    !gradsum::detail::gradient_needs_backward<gradsum::VirtualWorkers<gradsum::CentralDifference>>());
// Hessian members: Linear and SquaredError have them, the fakes do not.
static_assert(gradsum::detail::has_model_hessian<gradsum::Linear, double>::value);
static_assert(!gradsum::detail::has_model_hessian<ModelWithoutHessian, double>::value);
static_assert(gradsum::detail::has_second_derivative<gradsum::SquaredError, double>::value);
static_assert(gradsum::detail::needs_hessian<gradsum::Newton>::value);
static_assert(!gradsum::detail::needs_hessian<gradsum::SteepestDescent>::value);

static_assert(gradsum::is_loss_v<gradsum::SquaredError>);
static_assert(gradsum::is_loss_v<gradsum::BinaryCrossEntropy, float>);
static_assert(gradsum::is_loss_v<gradsum::SoftmaxCrossEntropy>);
static_assert(!gradsum::is_loss_v<LossWithoutDerivative>);
static_assert(!gradsum::is_classifier_loss_v<gradsum::SquaredError>);
static_assert(gradsum::is_classifier_loss_v<gradsum::SoftmaxCrossEntropy>);

static_assert(gradsum::is_gradient_v<gradsum::Analytic>);
static_assert(gradsum::is_gradient_v<gradsum::CentralDifference>);
static_assert(!gradsum::is_gradient_v<gradsum::Sum>);

static_assert(gradsum::is_reduction_v<gradsum::Sum>);
static_assert(!gradsum::is_reduction_v<gradsum::Analytic>);

static_assert(gradsum::is_aggregation_v<gradsum::Local>);
static_assert(!gradsum::is_aggregation_v<gradsum::Sum>);
static_assert(!gradsum::is_aggregation_v<gradsum::SGD>);

static_assert(gradsum::is_optimizer_v<gradsum::SGD>);
static_assert(gradsum::is_optimizer_v<gradsum::Adam>);
static_assert(!gradsum::is_optimizer_v<OptimizerWithoutStateSize>);

TEST_CASE("a user-written model meets the contract and trains") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = gradsum::Dataset<double, Space::memory_space>::from_host(
      2, 1, {1.0, 2.0}, {2.0, 4.0});
  auto step = gradsum::make_step<double>(Space(), MinimalModel{}, gradsum::SquaredError{},
                                         gradsum::SGD{0.1});
  auto theta = step.make_parameters();
  for (int i = 0; i < 200; ++i) step(theta, data);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  CHECK(h(0) == doctest::Approx(2.0).epsilon(1e-9));  // y = 2 x exactly
}

namespace {

// y = 2 x - x^2 on x = -1, -0.5, 0.5, 1, 2 (exactly representable), plus a
// perturbation so that the optimum is not the data's generator.
const std::vector<double> forward_x = {-1.0, -0.5, 0.5, 1.0, 2.0};
const std::vector<double> forward_y = {-3.0, -1.25, 0.75, 1.0, 0.5};

// The summed squared-error gradient of z = a x + b x^2 over rows
// [begin, end) by hand: sum (z_i - y_i) (x_i, x_i^2).
std::vector<double> forward_gradient(double a, double b, std::size_t begin = 0,
                                     std::size_t end = forward_x.size()) {
  std::vector<double> g(2, 0.0);
  for (std::size_t i = begin; i < end; ++i) {
    const double x = forward_x[i], r = a * x + b * x * x - forward_y[i];
    g[0] += r * x;
    g[1] += r * x * x;
  }
  return g;
}

}  // namespace

TEST_CASE("a model with forward only: CentralDifference gives its gradient and fit() trains it") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data =
      gradsum::Dataset<double, Space::memory_space>::from_host(5, 1, forward_x, forward_y);
  gradsum::CentralDifference fd;
  fd.eps = 1e-5;
  auto step = gradsum::make_step<double>(Space(), ForwardOnlyModel{}, gradsum::SquaredError{},
                                         gradsum::SGD{0.05}, gradsum::Objective{}, fd);
  auto theta = step.make_parameters();
  {
    auto h = Kokkos::create_mirror_view(theta);
    h(0) = 0.3;
    h(1) = -0.2;
    Kokkos::deep_copy(theta, h);
  }
  step.evaluate(theta, data);
  const auto expected = forward_gradient(0.3, -0.2);
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
  // The loss is quadratic in theta, so central differences are exact up to
  // rounding: about 1e-16 / 1e-5 relative. gradient() is the mean's.
  for (std::size_t j = 0; j < 2; ++j)
    CHECK(g(j) == doctest::Approx(expected[j] / 5).epsilon(1e-8));

  // Virtual workers over it call no backward either: three parts of 2, 2
  // and 1 rows, combined by the trimmed mean (k = 1 of 3: the median),
  // times 3.
  auto robust = gradsum::make_step<double>(
      Space(), ForwardOnlyModel{}, gradsum::SquaredError{}, gradsum::SGD{0.05},
      gradsum::Objective{0.0, false},
      gradsum::VirtualWorkers<gradsum::CentralDifference>{gradsum::TrimmedMean{1}, 3, fd});
  robust.evaluate(theta, data);
  const std::vector<double> parts[3] = {forward_gradient(0.3, -0.2, 0, 2),
                                        forward_gradient(0.3, -0.2, 2, 4),
                                        forward_gradient(0.3, -0.2, 4, 5)};
  auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), robust.sums());
  for (std::size_t j = 0; j < 2; ++j) {
    std::vector<double> v = {parts[0][j], parts[1][j], parts[2][j]};
    std::sort(v.begin(), v.end());
    CHECK(sums(j) == doctest::Approx(3 * v[1]).epsilon(1e-8));
  }

  // The least-squares optimum from the normal equations
  // [sum x^2, sum x^3; sum x^3, sum x^4] (a, b) = (sum x y, sum x^2 y).
  double s2 = 0, s3 = 0, s4 = 0, sy1 = 0, sy2 = 0;
  for (std::size_t i = 0; i < forward_x.size(); ++i) {
    const double x = forward_x[i], y = forward_y[i];
    s2 += x * x, s3 += x * x * x, s4 += x * x * x * x, sy1 += x * y, sy2 += x * x * y;
  }
  const double det = s2 * s4 - s3 * s3;
  const double a = (sy1 * s4 - s3 * sy2) / det, b = (s2 * sy2 - s3 * sy1) / det;
  gradsum::FitOptions options;
  options.epochs = 3000;
  const auto result = gradsum::fit(step, theta, data, options);
  CHECK(result.position.step == 3000);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  MESSAGE("forward-only fit: (" << h(0) << ", " << h(1) << "), optimum (" << a << ", " << b << ")");
  CHECK(h(0) == doctest::Approx(a).epsilon(1e-6));
  CHECK(h(1) == doctest::Approx(b).epsilon(1e-6));
}

TEST_CASE("an exact line search with a model without hessian() is refused by the step, naming it") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  gradsum::SteepestDescent exact;
  exact.line_search = gradsum::SteepestDescent::LineSearch::exact;
  auto make = [&](const gradsum::SteepestDescent& sd) {
    return gradsum::make_step<double>(Space(), ModelWithoutHessian{}, gradsum::SquaredError{}, sd);
  };
  CHECK_THROWS_WITH_AS(
      make(exact),
      "gradsum::Step: optimizer steepest needs the Hessian, which model minimal with loss "
      "squared_error does not provide: the Model must provide `hessian(const Scalar* theta, "
      "const Scalar* x, const Scalar* d2, Scalar* H) const` (Linear and Softmax with the "
      "library's losses do); choose a method without it (e.g. SteepestDescent with "
      "LineSearch::armijo, or LBFGS)",
      gradsum::Error);
  CHECK_NOTHROW(make(gradsum::SteepestDescent{}));  // Armijo needs no Hessian
}
