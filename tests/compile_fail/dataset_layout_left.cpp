// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: a Dataset cannot wrap column-major (LayoutLeft)
// features, whose rows are not contiguous; its static_assert says so and
// points to Dataset::copy_from (ctest builds this target and expects that
// message).

#include <gradsum/gradsum.hpp>

int main() {
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> x("x", 4, 3);
  Kokkos::View<double*, Kokkos::HostSpace> y("y", 4);
  gradsum::Dataset<double, Kokkos::HostSpace> data(x, y);
  return int(data.num_samples());
}
