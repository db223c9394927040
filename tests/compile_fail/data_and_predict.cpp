// SPDX-License-Identifier: Apache-2.0
// Must NOT compile, once for each GRADSUM_CASE_<name> (tests/CMakeLists.txt
// builds one target per case and expects its static_assert's message):
// Views a Dataset cannot wrap, and predict and metrics calls whose
// arguments do not fit.

#include <gradsum/gradsum.hpp>

#include <vector>

struct NotALoss {};

int main() {
  using Host = Kokkos::HostSpace;
  Kokkos::View<double**, Host> x("x", 4, 2);
  Kokkos::View<double*, Host> y("y", 4);
  Kokkos::View<double*, Host> theta("theta", 3);
  Kokkos::View<double**, Host> out("out", 4, 1);
  const gradsum::Linear model(2);
  const auto data = gradsum::Dataset<double, Host>(x, y);
  const Kokkos::DefaultHostExecutionSpace space;
#if defined(GRADSUM_CASE_dataset_layout_left)
  Kokkos::View<double**, Kokkos::LayoutLeft, Host> columns("columns", 4, 2);
  gradsum::Dataset<double, Host> wrapped(columns, y);
#elif defined(GRADSUM_CASE_dataset_scalar)
  Kokkos::View<float**, Host> floats("floats", 4, 2);
  gradsum::Dataset<double, Host> wrapped(floats, y);
#elif defined(GRADSUM_CASE_dataset_rank)
  gradsum::Dataset<double, Host> wrapped(y, y);
#elif defined(GRADSUM_CASE_dataset_not_a_view)
  std::vector<double> values(8);
  gradsum::Dataset<double, Host> wrapped(values, y);
#elif defined(GRADSUM_CASE_copy_from_rank)
  auto copied = gradsum::Dataset<double, Host>::copy_from(y, y);
#elif defined(GRADSUM_CASE_predict_layout_left)
  Kokkos::View<double**, Kokkos::LayoutLeft, Host> columns("columns", 4, 2);
  gradsum::predict(space, model, theta, columns, out);
#elif defined(GRADSUM_CASE_predict_scalar)
  Kokkos::View<float**, Host> floats("floats", 4, 2);
  gradsum::predict(space, model, theta, floats, out);
#elif defined(GRADSUM_CASE_predict_out_rank)
  gradsum::predict(space, model, theta, x, y);
#elif defined(GRADSUM_CASE_predict_classes_not_a_classifier)
  gradsum::predict_classes(space, model, gradsum::SquaredError{}, theta, x, y);
#elif defined(GRADSUM_CASE_predict_probabilities_no_probabilities)
  gradsum::predict_probabilities(space, model, gradsum::SquaredError{}, theta, x, out);
#elif defined(GRADSUM_CASE_accuracy_not_a_classifier)
  gradsum::accuracy(space, model, gradsum::SquaredError{}, theta, data);
#elif defined(GRADSUM_CASE_mean_loss_not_a_loss)
  gradsum::mean_loss(space, model, NotALoss{}, theta, data);
#else
#error "no GRADSUM_CASE_<name> defined"
#endif
  return 0;
}
