// SPDX-License-Identifier: Apache-2.0
// Compile-time checks of the requirement traits with minimal and broken
// fake policies. Everything here is decided by the compiler.

#include <gradsum/gradsum.hpp>

#include <doctest/doctest.h>

// A named namespace: the broken fakes are only looked at by the traits, and
// in an unnamed one nvcc warns that their members are never referenced.
namespace fakes {

// The step's kernels call num_outputs(), num_parameters() and
// is_regularized(j) as well as forward and backward: all KOKKOS_FUNCTION.
struct MinimalModel {
  static const char* name() { return "minimal"; }
  int num_features() const { return 1; }
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  KOKKOS_FUNCTION int num_parameters() const { return 1; }
  KOKKOS_FUNCTION bool is_regularized(int) const { return true; }
  template <class S>
  KOKKOS_FUNCTION void forward(const S* theta, const S* x, S* z) const { z[0] = theta[0] * x[0]; }
  template <class S>
  KOKKOS_FUNCTION void backward(const S*, const S* x, const S* dz, S* g) const { g[0] += dz[0] * x[0]; }
};

struct ModelWithoutBackward {
  static const char* name() { return "broken"; }
  int num_features() const { return 1; }
  int num_outputs() const { return 1; }
  int num_parameters() const { return 1; }
  bool is_regularized(int) const { return true; }
  template <class S>
  void forward(const S*, const S*, S*) const {}
};

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
using fakes::MinimalModel;
using fakes::ModelWithoutBackward;
using fakes::OptimizerWithoutStateSize;

static_assert(gradsum::is_model_v<gradsum::Linear>);
static_assert(gradsum::is_model_v<gradsum::Softmax, float>);
static_assert(gradsum::is_model_v<MinimalModel>);
static_assert(!gradsum::is_model_v<ModelWithoutBackward>);
static_assert(gradsum::detail::has_forward<ModelWithoutBackward, double>::value);
static_assert(!gradsum::detail::has_backward<ModelWithoutBackward, double>::value);
static_assert(!gradsum::is_model_v<int>);

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
