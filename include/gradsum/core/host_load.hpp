// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Is this machine already busy? The runnable threads the kernel counts,
/// against its cores, and the warning a program gives before it adds its
/// own threads: OpenMP threads that wait at barriers by spinning slow down
/// many times over when the system deschedules one of them (on a loaded
/// 2-core machine, 2 threads trained 11 times slower than 1).

#include <gradsum/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace gradsum {

/// What the scheduler showed, machine-wide.
struct HostLoad {
  /// Threads running or ready to run (/proc/loadavg's "R/T" field, R), the
  /// caller's own included; -1 where the system does not say (not Linux).
  int runnable = -1;
  /// Cores online on the machine (not only this process's).
  int online_cores = 1;
};

namespace detail {

/// One reading of /proc/loadavg's runnable count, or -1.
inline int runnable_threads() {
  int runnable = -1;
#if defined(__linux__)
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    double one, five, fifteen;
    int total;
    if (std::fscanf(f, "%lf %lf %lf %d/%d", &one, &five, &fifteen, &runnable, &total) != 5)
      runnable = -1;
    std::fclose(f);
  }
#endif
  return runnable;
}

}  // namespace detail

/// The machine's runnable threads and online cores. One reading, and when
/// it shows any thread besides the caller's, `confirm` more `interval`
/// apart, keeping the smallest: a passing burst is not a load. Call it
/// before starting threads of one's own (before Kokkos), which would
/// count. Blocks for confirm * interval at most.
inline HostLoad read_host_load(int confirm = 2,
                               std::chrono::milliseconds interval = std::chrono::milliseconds(20)) {
  HostLoad load;
#if defined(__linux__)
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  load.online_cores = online > 0 ? int(online) : 1;
#endif
  load.runnable = detail::runnable_threads();
  for (int i = 0; i < confirm && load.runnable > 1; ++i) {
    std::this_thread::sleep_for(interval);
    const int again = detail::runnable_threads();
    if (again >= 0) load.runnable = std::min(load.runnable, again);
  }
  return load;
}

/// Why a process about to run `threads` host threads, on `cores` cores it
/// may use, with `local_ranks` processes of its job (the caller's own
/// included) on the node, will find more runnable threads than cores, given
/// the `load` read before any of them started; "" when it will not, when
/// `threads` <= 1 (no barrier to spin at) or the load is unknown. The
/// job's own ranks are counted in load.runnable where they were running;
/// the rest were other programs'. Machine-wide: a process bound to some of
/// the cores sees the others' load too.
inline std::string oversubscription_warning(const HostLoad& load, int threads, int cores,
                                            int local_ranks = 1) {
  if (threads <= 1) return {};
  const std::string advice =
      "; OpenMP threads that spin at barriers then wait for descheduled ones, which can make "
      "training many times slower: run fewer threads (OMP_NUM_THREADS or --kokkos-threads), "
      "or set OMP_WAIT_POLICY=passive (see 'Troubleshooting' in docs/user-guide.md)";
  if (threads > cores)
    return concat(threads, " threads on the ", cores, " core", cores == 1 ? "" : "s",
                  " this process may run on", advice);
  if (load.runnable < 0) return {};
  const int others = std::max(0, load.runnable - std::max(1, local_ranks));
  const int ours = threads * std::max(1, local_ranks);
  if (others + ours <= load.online_cores) return {};
  return concat(others, " thread", others == 1 ? " of another program was" : "s of other programs were",
                " running or waiting to run on this machine's ", load.online_cores, " core",
                load.online_cores == 1 ? "" : "s", " (/proc/loadavg), and this job adds ", ours,
                advice);
}

}  // namespace gradsum
