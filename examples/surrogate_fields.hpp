// SPDX-License-Identifier: Apache-2.0
#pragma once

// The fields of a toy simulation that examples/surrogate.cpp and
// surrogate_inference.cpp share: per cell a density, a velocity and an
// internal energy, kept column-major on the device as simulation codes keep
// them (one column per field), and the pressure of a made-up equation of
// state that the surrogate learns.

#include <gradsum/gradsum.hpp>

#include <cstdint>

namespace gradsum_examples {

using Fields = Kokkos::View<double**, Kokkos::LayoutLeft>;

/// The pressure the equation of state gives: p = 0.4 rho e (1 + 0.1 sin 3u).
KOKKOS_INLINE_FUNCTION double pressure_of(double rho, double u, double e) {
  return 0.4 * rho * e * (1 + 0.1 * gradsum::math::sin(3 * u));
}

/// `cells` states drawn from `seed` (rho and e in [0.5, 2], u in [-1, 1]),
/// as an n x 3 LayoutLeft View, and their pressures.
inline void make_fields(std::int64_t cells, std::uint64_t seed, Fields& state,
                        Kokkos::View<double*>& pressure) {
  state = Fields("state", cells, 3);
  pressure = Kokkos::View<double*>("pressure", cells);
  const Fields s = state;
  const Kokkos::View<double*> p = pressure;
  Kokkos::parallel_for(
      "gradsum_examples::make_fields", cells, KOKKOS_LAMBDA(std::int64_t i) {
        // SplitMix64 of the cell and the seed: the same states on every space.
        auto draw = [&](std::uint64_t k) {
          std::uint64_t z = (std::uint64_t(i) * 3 + k) * 0x9e3779b97f4a7c15ull + seed;
          z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
          z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
          return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;  // in [0, 1)
        };
        s(i, 0) = 0.5 + 1.5 * draw(0);
        s(i, 1) = -1 + 2 * draw(1);
        s(i, 2) = 0.5 + 1.5 * draw(2);
        p(i) = pressure_of(s(i, 0), s(i, 1), s(i, 2));
      });
}

}  // namespace gradsum_examples
