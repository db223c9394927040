// SPDX-License-Identifier: Apache-2.0
// The shared test main: starts MPI (MPI test targets only), then Kokkos,
// runs doctest, and finalizes in reverse order. MPI test targets take
// --gradsum-message-elements=N: every collective gradsum makes then goes
// in messages of at most N values (gradsum::mpi::set_message_elements).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#ifdef GRADSUM_TEST_WITH_MPI
#include <gradsum/mpi/messages.hpp>

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#endif

int main(int argc, char** argv) {
#ifdef GRADSUM_TEST_WITH_MPI
  MPI_Init(&argc, &argv);
  const char* option = "--gradsum-message-elements=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], option, std::strlen(option)) == 0)
      gradsum::mpi::set_message_elements(
          std::strtoull(argv[i] + std::strlen(option), nullptr, 10));
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
