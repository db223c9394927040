// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// gradsum::Environment, which starts what a program needs: MPI (when
/// gradsum is built with it, see mpi/environment.hpp), then Kokkos. A
/// top-level header, above mpi/, since it picks one of the two.

#include <gradsum/config.hpp>

#if GRADSUM_ENABLE_MPI
#include <gradsum/mpi/environment.hpp>
#else
#include <gradsum/core/error.hpp>
#include <gradsum/core/host_threads.hpp>
#include <gradsum/core/kokkos_compat.hpp>

namespace gradsum {

/// Starts Kokkos (unless already started) for a program and finalizes it
/// at the end if it started it. Built with MPI, the same class also owns
/// MPI start-up (see mpi/environment.hpp).
class Environment {
 public:
  /// With HostThreads::per_rank, and when it starts Kokkos, it picks the host
  /// threads first (see HostThreads and choose_host_threads; one process: all its cores).
  Environment(int& argc, char**& argv, HostThreads threads = HostThreads::kokkos) {
    if (!Kokkos::is_initialized()) {
      if (threads == HostThreads::per_rank) choice_ = choose_host_threads(argc, argv, 1);
      translate_kokkos_thread_flag(argc, argv);
      Kokkos::initialize(argc, argv);
      owns_kokkos_ = true;
    }
  }
  ~Environment() {
    if (owns_kokkos_) Kokkos::finalize();
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
  /// job with MPI_Abort (status 1); with one rank (always, without MPI) it
  /// returns 1.
  template <class Body>
  int run(const char* program, Body&& body) const {
    return detail::run_program(program, 0, 1, body, [] {});
  }

  /// Rank of this process: 0 without MPI.
  int rank() const { return 0; }
  /// Number of processes: 1 without MPI.
  int size() const { return 1; }
  /// What it decided about host threads (threads 0: it left them to Kokkos).
  const ThreadChoice& thread_choice() const { return choice_; }

 private:
  bool owns_kokkos_ = false;
  ThreadChoice choice_;
};

}  // namespace gradsum
#endif
