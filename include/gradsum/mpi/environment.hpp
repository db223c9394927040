// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/host_threads.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/mpi/communicator.hpp>

#include <mpi.h>

namespace gradsum {

/// Starts MPI (unless already started) and then Kokkos (unless already
/// started) for a program, and finalizes in reverse order what it started.
/// Programs that start MPI or Kokkos themselves keep working.
class Environment {
 public:
  /// Collective over MPI_COMM_WORLD. With HostThreads::per_rank, and when
  /// it starts Kokkos, it picks the host threads first: this process's
  /// cores divided by the ranks on its node (MPI_COMM_TYPE_SHARED), so the
  /// ranks of a node do not oversubscribe its cores (see HostThreads).
  Environment(int& argc, char**& argv, HostThreads threads = HostThreads::kokkos) {
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
      if (threads == HostThreads::per_rank)
        choice_ = choose_host_threads(argc, argv, local_ranks());
      translate_kokkos_thread_flag(argc, argv);
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

  /// Runs a program's `body` (returning its exit status) under gradsum's
  /// rule for errors, so that no rank is left waiting: a gradsum::AgreedError
  /// (thrown alike on every rank, e.g. ranks that built different steps)
  /// returns 1 on every rank, rank 0 printing "PROGRAM: error: MESSAGE" on
  /// standard error. Any other exception (a gradsum::Error raised on one
  /// rank, std::bad_alloc …) may be this rank's alone while the others wait
  /// in a collective: the rank prints "PROGRAM: error on rank R of N:
  /// MESSAGE (ending every rank)" and, with more than one rank, ends the
  /// job with MPI_Abort (status 1); with one rank it returns 1.
  template <class Body>
  int run(const char* program, Body&& body) const {
    return detail::run_program(program, rank_, size_, body,
                               [] { MPI_Abort(MPI_COMM_WORLD, 1); });
  }

  /// Rank in MPI_COMM_WORLD.
  int rank() const { return rank_; }
  /// Size of MPI_COMM_WORLD.
  int size() const { return size_; }
  /// What it decided about host threads (threads 0: it left them to Kokkos).
  const ThreadChoice& thread_choice() const { return choice_; }

 private:
  // Ranks of MPI_COMM_WORLD that share this node's memory.
  static int local_ranks() {
    MPI_Comm node = MPI_COMM_NULL;
    mpi::check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
               "MPI_Comm_split_type");
    int n = 1;
    const int status = MPI_Comm_size(node, &n);
    mpi::check(MPI_Comm_free(&node), "MPI_Comm_free");
    mpi::check(status, "MPI_Comm_size");
    return n;
  }
  ThreadChoice choice_;
  bool owns_mpi_ = false;
  bool owns_kokkos_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace gradsum
