// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: Newton with a loss that has no second_derivative() is
// rejected by the step's static_assert naming that member (ctest builds
// this target and expects that message).

#include <gradsum/gradsum.hpp>

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

int main() {
  auto step = gradsum::make_step<double>(Kokkos::DefaultHostExecutionSpace(), gradsum::Linear(1),
                                         FirstOrderLoss{}, gradsum::Newton{});
  (void)step;
}
