// SPDX-License-Identifier: Apache-2.0
// The shared test main: starts MPI (MPI test targets only), then Kokkos,
// runs doctest, and finalizes in reverse order.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#ifdef GRADSUM_TEST_WITH_MPI
#include <mpi.h>
#endif

int main(int argc, char** argv) {
#ifdef GRADSUM_TEST_WITH_MPI
  MPI_Init(&argc, &argv);
#endif
  int status = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    doctest::Context context(argc, argv);
    status = context.run();
  }
#ifdef GRADSUM_TEST_WITH_MPI
  MPI_Finalize();
#endif
  return status;
}
