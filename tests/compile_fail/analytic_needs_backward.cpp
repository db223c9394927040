// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a model with forward() only, under the Analytic
// gradient (the default), is rejected by the step's static_assert naming
// backward() and pointing to CentralDifference (ctest builds this target
// and expects that message).

#include "../fake_models.hpp"

#include <gradsum/gradsum.hpp>

int main() {
  auto step = gradsum::make_step<double>(Kokkos::DefaultHostExecutionSpace(),
                                         fakes::ForwardOnlyModel{},
                                         gradsum::SquaredError{});
  (void)step;
}
