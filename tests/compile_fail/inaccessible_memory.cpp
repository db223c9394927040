// SPDX-License-Identifier: Apache-2.0
// Must NOT compile: data in a memory space the execution space cannot
// access is rejected by Step::evaluate's static_assert with a message
// (ctest builds this target and expects that message).

#include <gradsum/gradsum.hpp>

// A memory space no host execution space can access, like CudaSpace seen
// from Kokkos::Serial.
struct FarAwaySpace {
  using memory_space = FarAwaySpace;
  using execution_space = Kokkos::DefaultHostExecutionSpace;
  using device_type = Kokkos::Device<execution_space, memory_space>;
  using size_type = std::size_t;
  static constexpr const char* name() { return "FarAway"; }
};

struct FarAwayData {
  using scalar_type = double;
  using memory_space = FarAwaySpace;
  using features_view = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using targets_view = Kokkos::View<double*, Kokkos::HostSpace>;
  int num_features() const { return 1; }
  std::int64_t num_samples() const { return 0; }
  gradsum::RowRange all_rows() const { return {}; }
  features_view features() const { return {}; }
  targets_view targets() const { return {}; }
};

int main() {
  auto step = gradsum::make_step<double>(Kokkos::DefaultHostExecutionSpace(), gradsum::Linear(1),
                                         gradsum::SquaredError{});
  auto theta = step.make_parameters();
  step.evaluate(theta, FarAwayData{});
}
