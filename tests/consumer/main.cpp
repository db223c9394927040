// SPDX-License-Identifier: Apache-2.0
// Built against the installed package by the ctest test install.consumer
// (install_and_consume.sh): the umbrella header, the generated config and
// the Kokkos dependency must all be found.
#include <gradsum/gradsum.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  auto data = gradsum::Dataset<double>::from_host(2, 1, {1.0, 1.0}, {-0.5, 0.2});
  auto step = gradsum::make_step<double>(Kokkos::DefaultExecutionSpace(), gradsum::Linear(1),
                                         gradsum::SquaredError{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  step.evaluate(theta, data);
  auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.sums());
  std::printf("gradsum %s (Kokkos backends %s): 0.5 + (-0.2) = %.2f\n",
              GRADSUM_VERSION_STRING, GRADSUM_KOKKOS_BACKENDS, sums(0));
  return sums(0) > 0.2999 && sums(0) < 0.3001 ? 0 : 1;
}
