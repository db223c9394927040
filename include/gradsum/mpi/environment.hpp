// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/mpi/communicator.hpp>

#include <mpi.h>

namespace gradsum {

/// Starts MPI (unless already started) and then Kokkos (unless already
/// started) for a program, and finalizes in reverse order what it started.
/// Programs that start MPI or Kokkos themselves keep working.
class Environment {
 public:
  /// Collective over MPI_COMM_WORLD when it starts MPI.
  Environment(int& argc, char**& argv) {
    int initialized = 0;
    mpi::check(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) {
      int provided = 0;
      mpi::check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided),
                 "MPI_Init_thread");
      owns_mpi_ = true;
    }
    mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize(argc, argv);
      owns_kokkos_ = true;
    }
  }
  ~Environment() {
    if (owns_kokkos_) Kokkos::finalize();
    if (owns_mpi_) MPI_Finalize();
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  /// Rank in MPI_COMM_WORLD.
  int rank() const { return rank_; }
  /// Size of MPI_COMM_WORLD.
  int size() const { return size_; }

 private:
  bool owns_mpi_ = false;
  bool owns_kokkos_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace gradsum
