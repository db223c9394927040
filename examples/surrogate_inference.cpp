// SPDX-License-Identifier: Apache-2.0
// The second run: load the surrogate surrogate.cpp saved and use it inside
// a kernel of one's own, per cell of the simulation's column-major fields,
// with per-thread room sized for the network (forward_with). Checks that
// the kernel gives gradsum::predict's values bit for bit, and that they
// follow the equation of state (R^2 of at least 0.99); exits with status 1
// otherwise.
//
//   build/examples/surrogate_inference [FILE]   (default surrogate.safetensors)
#include "surrogate_fields.hpp"

#include <gradsum/gradsum.hpp>

#include <cstdio>
#include <string>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const std::string path = argc > 1 ? argv[1] : "surrogate.safetensors";

  // One call: the architecture and the parameters, in the default memory
  // space. A kernel captures copies (not structured bindings).
  const auto saved = gradsum::load_model<gradsum::MLP, double>(path);
  const gradsum::MLP net = saved.model;
  const auto theta = saved.theta;
  std::printf("loaded %s: %s\n", path.c_str(), net.describe().c_str());

  gradsum_examples::Fields state;
  Kokkos::View<double*> truth;
  gradsum_examples::make_fields(2048, 2, state, truth);
  const std::int64_t cells = state.extent(0);

  // Room for two hidden layers per thread, on the stack; checked once here.
  constexpr int room = 64;
  if (net.forward_workspace_size() > room) {
    std::printf("the network needs %d values of room per thread, more than %d\n",
                int(net.forward_workspace_size()), room);
    return 1;
  }
  Kokkos::View<double*> mine("mine", cells);
  Kokkos::parallel_for(
      "surrogate_inference::pressure", Kokkos::RangePolicy<Space>(0, cells),
      KOKKOS_LAMBDA(std::int64_t i) {
        const double x[3] = {state(i, 0), state(i, 1), state(i, 2)};
        double z[1], work[room];
        net.forward_with(theta.data(), x, z, work);
        mine(i) = z[0];
      });

  Kokkos::View<double**> outputs("outputs", cells, 1);
  gradsum::predict(Space(), net, theta, state, outputs);  // LayoutLeft read in place

  int differ = 0;
  double error = 0, spread = 0, mean = 0;
  Kokkos::parallel_reduce(
      "surrogate_inference::compare", Kokkos::RangePolicy<Space>(0, cells),
      KOKKOS_LAMBDA(std::int64_t i, int& d) { d += mine(i) != outputs(i, 0) ? 1 : 0; }, differ);
  Kokkos::parallel_reduce(
      "surrogate_inference::mean", Kokkos::RangePolicy<Space>(0, cells),
      KOKKOS_LAMBDA(std::int64_t i, double& m) { m += truth(i); }, mean);
  mean /= double(cells);
  Kokkos::parallel_reduce(
      "surrogate_inference::error", Kokkos::RangePolicy<Space>(0, cells),
      KOKKOS_LAMBDA(std::int64_t i, double& e) { e += (mine(i) - truth(i)) * (mine(i) - truth(i)); },
      error);
  Kokkos::parallel_reduce(
      "surrogate_inference::spread", Kokkos::RangePolicy<Space>(0, cells),
      KOKKOS_LAMBDA(std::int64_t i, double& s) { s += (truth(i) - mean) * (truth(i) - mean); },
      spread);
  const double r2 = 1 - error / spread;
  std::printf("%lld cells: %d differ from gradsum::predict; R^2 against the equation of state %.6f\n",
              static_cast<long long>(cells), differ, r2);
  return differ == 0 && r2 >= 0.99 ? 0 : 1;
}
