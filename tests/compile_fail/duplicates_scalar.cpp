// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: conflicting_duplicates compares float or double values
// only (tests/CMakeLists.txt expects its static_assert's message).

#include <gradsum/diagnostics/duplicates.hpp>
#include <gradsum/data/dataset.hpp>

int main() {
  using Host = Kokkos::HostSpace;
  Kokkos::View<int**, Host> x("x", 4, 2);
  Kokkos::View<int*, Host> y("y", 4);
  const gradsum::Dataset<int, Host> data(x, y);
  gradsum::diagnostics::conflicting_duplicates(Kokkos::DefaultHostExecutionSpace(), data);
  return 0;
}
