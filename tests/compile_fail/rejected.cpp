// SPDX-License-Identifier: Apache-2.0
// Must NOT compile. Each function below is one misuse that a static_assert
// of gradsum rejects; the `expect:` line above it is the start of the
// message that must appear. The compiler reports every failed static_assert
// of the file in one run, so tests/compile_fail/expect_messages.cmake
// compiles it once and checks that every expected message is there (a
// missing one names its case).

#include "../fake_models.hpp"

#include <gradsum/gradsum.hpp>

#include <vector>

namespace {

using Host = Kokkos::HostSpace;
using HostSpace = Kokkos::DefaultHostExecutionSpace;

// A memory space no host execution space can access, like CudaSpace seen
// from Kokkos::Serial.
struct FarAwaySpace {
  using memory_space = FarAwaySpace;
  using execution_space = HostSpace;
  using device_type = Kokkos::Device<execution_space, memory_space>;
  using size_type = std::size_t;
  static constexpr const char* name() { return "FarAway"; }
};

struct FarAwayData {
  using scalar_type = double;
  using memory_space = FarAwaySpace;
  using features_view = Kokkos::View<double**, Kokkos::LayoutRight, Host>;
  using targets_view = Kokkos::View<double*, Host>;
  int num_features() const { return 1; }
  std::int64_t num_samples() const { return 0; }
  gradsum::RowRange all_rows() const { return {}; }
  features_view features() const { return {}; }
  targets_view targets() const { return {}; }
};

// Squared error with its first derivative only.
struct FirstOrderLoss {
  static const char* name() { return "first_order"; }
  static bool supports_outputs(int k) { return k == 1; }
  template <class S>
  KOKKOS_FUNCTION static bool is_valid_target(S, int) { return true; }
  template <class S>
  KOKKOS_FUNCTION static S value(const S* z, int, S y) { return (z[0] - y) * (z[0] - y) / 2; }
  template <class S>
  KOKKOS_FUNCTION static void derivative(const S* z, int, S y, S* dz) { dz[0] = z[0] - y; }
};

struct NotALoss {};

// The arguments the predict and metrics cases share.
struct Fixture {
  Kokkos::View<double**, Host> x{"x", 4, 2};
  Kokkos::View<double*, Host> y{"y", 4};
  Kokkos::View<double*, Host> theta{"theta", 3};
  Kokkos::View<double**, Host> out{"out", 4, 1};
  gradsum::Linear model{2};
  HostSpace space;
};

// expect: the data's memory space is not accessible from the step's execution space
void inaccessible_memory() {
  auto step = gradsum::make_step<double>(HostSpace(), gradsum::Linear(1), gradsum::SquaredError{});
  auto theta = step.make_parameters();
  step.evaluate(theta, FarAwayData{});
}

// expect: a model with forward only trains with CentralDifference
void analytic_needs_backward() {
  (void)gradsum::make_step<double>(HostSpace(), fakes::ForwardOnlyModel{}, gradsum::SquaredError{});
}

// fakes::MinimalModel has forward and backward, no second derivatives.
// expect: gradsum::Step: the Optimizer needs the Hessian, so the Model must provide `hessian(
void newton_needs_model_hessian() {
  (void)gradsum::make_step<double>(HostSpace(), fakes::MinimalModel{}, gradsum::SquaredError{},
                                   gradsum::Newton{});
}

// expect: gradsum::Step: the Optimizer needs the Hessian, so the Loss must provide `second_derivative(
void newton_needs_second_derivative() {
  (void)gradsum::make_step<double>(HostSpace(), gradsum::Linear(1), FirstOrderLoss{},
                                   gradsum::Newton{});
}

// expect: gradsum::conflicting_duplicates: the data's scalar_type must be float or double
void duplicates_scalar() {
  Kokkos::View<int**, Host> x("x", 4, 2);
  Kokkos::View<int*, Host> y("y", 4);
  const gradsum::Dataset<int, Host> data(x, y);
  gradsum::conflicting_duplicates(HostSpace(), data);
}

// expect: gradsum::Dataset: features and targets must hold the Dataset's
void dataset_scalar() {
  Kokkos::View<float**, Host> floats("floats", 4, 2);
  gradsum::Dataset<double, Host> wrapped(floats, Fixture().y);
}

// expect: gradsum::Dataset: features must be a rank-2 View
void dataset_rank() {
  const Fixture f;
  gradsum::Dataset<double, Host> wrapped(f.y, f.y);
}

// expect: gradsum::Dataset: features and targets must be Kokkos Views
void dataset_not_a_view() {
  std::vector<double> values(8);
  gradsum::Dataset<double, Host> wrapped(values, Fixture().y);
}

// expect: gradsum::Dataset::copy_from: features must be a rank-2 Kokkos View
void copy_from_rank() {
  const Fixture f;
  (void)gradsum::Dataset<double, Host>::copy_from(f.y, f.y);
}

// expect: gradsum::predict: features must hold the parameters' scalar type
void predict_scalar() {
  const Fixture f;
  Kokkos::View<float**, Host> floats("floats", 4, 2);
  gradsum::predict(f.space, f.model, f.theta, floats, f.out);
}

// expect: gradsum::predict: out must be a rank-2 View
void predict_out_rank() {
  const Fixture f;
  gradsum::predict(f.space, f.model, f.theta, f.x, f.y);
}

// expect: gradsum::predict_classes: the Loss must provide `int predict_class
void predict_classes_not_a_classifier() {
  const Fixture f;
  gradsum::predict_classes(f.space, f.model, gradsum::SquaredError{}, f.theta, f.x, f.y);
}

// expect: gradsum::predict_probabilities: the Loss must provide `void probabilities
void predict_probabilities_no_probabilities() {
  const Fixture f;
  gradsum::predict_probabilities(f.space, f.model, gradsum::SquaredError{}, f.theta, f.x, f.out);
}

// expect: gradsum::accuracy: the Loss must provide `int predict_class
void accuracy_not_a_classifier() {
  const Fixture f;
  const auto data = gradsum::Dataset<double, Host>(f.x, f.y);
  (void)gradsum::accuracy(f.space, f.model, gradsum::SquaredError{}, f.theta, data);
}

// expect: gradsum::mean_loss: the Loss must provide name
void mean_loss_not_a_loss() {
  const Fixture f;
  const auto data = gradsum::Dataset<double, Host>(f.x, f.y);
  (void)gradsum::mean_loss(f.space, f.model, NotALoss{}, f.theta, data);
}

}  // namespace

int main() {
  inaccessible_memory();
  analytic_needs_backward();
  newton_needs_model_hessian();
  newton_needs_second_derivative();
  duplicates_scalar();
  dataset_layout_left();
  dataset_scalar();
  dataset_rank();
  dataset_not_a_view();
  copy_from_rank();
  predict_layout_left();
  predict_scalar();
  predict_out_rank();
  predict_classes_not_a_classifier();
  predict_probabilities_no_probabilities();
  accuracy_not_a_classifier();
  mean_loss_not_a_loss();
}
