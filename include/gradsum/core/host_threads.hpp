// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// How many host threads a program's processes take, for gradsum::Environment
/// (environment.hpp): the choice a user made, or this process's cores shared
/// among the ranks on its node. No Kokkos, no MPI: the caller counts ranks.

#include <gradsum/core/error.hpp>

#include <cstdlib>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace gradsum {

/// Whether gradsum::Environment picks the number of host threads.
enum class HostThreads {
  /// Kokkos decides, as it would without gradsum (its flags, OMP_NUM_THREADS,
  /// the OpenMP runtime's default).
  kokkos,
  /// Unless the user chose (OMP_NUM_THREADS, KOKKOS_NUM_THREADS,
  /// --kokkos-threads, --kokkos-num-threads): max(1, cores / ranks on this
  /// node), where the cores are those this process may run on. And unless
  /// OMP_PROC_BIND is set, it is set to what the OpenMP runtime does
  /// (see choose_host_threads below), which keeps Kokkos from warning.
  per_rank
};

/// What gradsum::Environment decided about host threads.
struct ThreadChoice {
  /// Threads asked of Kokkos; 0 when the choice was left to Kokkos or the user.
  int threads = 0;
  /// Cores this process may run on (its CPU affinity mask).
  int cores = 1;
  /// Processes of the job on this node (1 without MPI).
  int local_ranks = 1;
  /// Who chose: "cores / local ranks", the variable or flag the user set,
  /// or "Kokkos".
  std::string origin = "Kokkos";
};

namespace detail {

/// Cores this process may run on: its affinity mask where the system has
/// one (a launcher that binds ranks narrows it), else the hardware threads.
inline int available_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

/// The user's own choice of thread count, or an empty string: an
/// environment variable or a Kokkos flag that sets it.
inline std::string user_thread_choice(int argc, char** argv) {
  for (const char* variable : {"OMP_NUM_THREADS", "KOKKOS_NUM_THREADS"})
    if (std::getenv(variable) != nullptr) return variable;
  // --kokkos-threads (Kokkos 3) and --kokkos-num-threads (Kokkos 3.7 and 4).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const char* flag : {"--kokkos-threads", "--kokkos-num-threads"})
      if (arg.compare(0, std::string(flag).size(), flag) == 0) return flag;
  }
  return {};
}

}  // namespace detail

/// The most host threads a process may ask of Kokkos: Kokkos 3's OpenMP
/// backend holds at most 512 (it crashes with more).
constexpr int max_host_threads = 512;

/// Checks the thread-count flags among argv[1 … argc) (--kokkos-threads=N,
/// --kokkos-num-threads=N) before Kokkos reads them: N must be an integer in
/// [1, max_host_threads]. Throws gradsum::Error naming the flag and the value
/// (Kokkos itself would end the program with an uncaught exception, or
/// crash).
inline void check_thread_flags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const std::string flag : {"--kokkos-threads", "--kokkos-num-threads"}) {
      if (arg.compare(0, flag.size(), flag) != 0) continue;
      const std::string value = arg.size() > flag.size() + 1 ? arg.substr(flag.size() + 1) : "";
      if (arg.size() > flag.size() && arg[flag.size()] != '=') continue;  // another flag
      char* end = nullptr;
      const long n = value.empty() || value[0] == '-' ? 0 : std::strtol(value.c_str(), &end, 10);
      if (n < 1 || n > max_host_threads || end == nullptr || *end != '\0')
        fail(flag, ": expected ", flag, "=N with N an integer in [1, ", max_host_threads,
             "], got '", arg, "'");
    }
  }
}

/// Picks the host threads before Kokkos starts, as HostThreads::per_rank
/// does, for a process with `local_ranks` processes of its job on its node
/// (a program that starts Kokkos itself, without gradsum::Environment, calls
/// it first; gradsum-predict does). Unless the user chose (see
/// HostThreads), max(1, cores / local_ranks) threads are asked of Kokkos
/// through KOKKOS_NUM_THREADS, which Kokkos 3.4 through 4.x read at
/// initialization.
///
/// The OpenMP runtime reads OMP_PROC_BIND and OMP_PLACES once, when it is
/// loaded, before main: setting them later binds nothing. So an unset
/// OMP_PROC_BIND is set to describe what the runtime already does, which
/// silences Kokkos' warning without a false claim: "true" if OMP_PLACES
/// (or GCC's GOMP_CPU_AFFINITY) is set, as the runtime then binds, else
/// "false". Not thread-safe (setenv): call before other threads start, and
/// once (its own KOKKOS_NUM_THREADS would then count as the user's).
inline ThreadChoice choose_host_threads(int argc, char** argv, int local_ranks = 1) {
  ThreadChoice c;
  c.cores = detail::available_cores();
  c.local_ranks = local_ranks > 0 ? local_ranks : 1;
  const bool places = std::getenv("OMP_PLACES") != nullptr ||
                      std::getenv("GOMP_CPU_AFFINITY") != nullptr;  // GCC's runtime binds then
  if (std::getenv("OMP_PROC_BIND") == nullptr) ::setenv("OMP_PROC_BIND", places ? "true" : "false", 1);
  const std::string user = detail::user_thread_choice(argc, argv);
  if (!user.empty()) {
    c.origin = user;
    return c;
  }
  c.threads = c.cores / c.local_ranks > 1 ? c.cores / c.local_ranks : 1;
  c.origin = "cores / local ranks";
  ::setenv("KOKKOS_NUM_THREADS", std::to_string(c.threads).c_str(), 1);
  return c;
}

}  // namespace gradsum
