// SPDX-License-Identifier: Apache-2.0
// A surrogate for a simulation's equation of state, trained where the
// simulation keeps its fields: a column-major (LayoutLeft) View of per-cell
// states and a separate View of pressures, wrapped in a Dataset without a
// copy. Scored on the cells of a later step (other states), then saved as
// a safetensors file for surrogate_inference.cpp. Exits with status 1 if
// the held-out R^2 is below 0.99.
//
//   build/examples/surrogate [FILE]    (default surrogate.safetensors)
#include "surrogate_fields.hpp"

#include <gradsum/gradsum.hpp>

#include <cstdio>
#include <string>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const std::string path = argc > 1 ? argv[1] : "surrogate.safetensors";

  gradsum_examples::Fields state, later_state;
  Kokkos::View<double*> pressure, later_pressure;
  gradsum_examples::make_fields(8192, 1, state, pressure);
  gradsum_examples::make_fields(2048, 2, later_state, later_pressure);
  const gradsum::Dataset data(state, pressure);  // LayoutLeft, in place
  const gradsum::Dataset later(later_state, later_pressure);

  const gradsum::MLP net(3, {32, 32}, 1, gradsum::Activation::tanh);
  auto step = gradsum::make_step<double>(Space(), net, gradsum::SquaredError{},
                                         gradsum::Adam{0.003});
  auto theta = step.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::glorot_uniform().with_seed(3), theta);
  gradsum::FitOptions options;
  options.epochs = 40;
  options.batch = 64;
  options.seed = 1;
  const auto fitted = gradsum::fit(step, theta, data, options);
  std::printf("trained %lld steps: %s\n", static_cast<long long>(fitted.position.step),
              gradsum::to_string(fitted.reason).c_str());

  const auto scores = gradsum::regression_scores(Space(), net, theta, later);
  std::printf("later cells: rmse %.3g, R^2 %.6f\n", scores.rmse, scores.r2);
  gradsum::save_model(path, step, theta);
  std::printf("saved %s\n", path.c_str());
  return scores.r2 >= 0.99 ? 0 : 1;
}
