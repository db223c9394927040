// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: Newton with a model that has no hessian() is rejected
// by the step's static_assert naming that member (ctest builds this target
// and expects that message).

#include "../fake_models.hpp"

#include <gradsum/gradsum.hpp>

// fakes::MinimalModel has forward and backward, no second derivatives.
int main() {
  auto step = gradsum::make_step<double>(Kokkos::DefaultHostExecutionSpace(),
                                         fakes::MinimalModel{},
                                         gradsum::SquaredError{}, gradsum::Newton{});
  (void)step;
}
