// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Every difference between the Kokkos versions gradsum supports (3.4 through
/// 4.x) lives in this file, so the rest of the library reads the same on all.

#include <Kokkos_Core.hpp>

#include <deque>
#include <string>

#if !defined(KOKKOS_VERSION) || KOKKOS_VERSION < 30400
#error "gradsum needs Kokkos 3.4 or newer"
#endif

namespace gradsum {
namespace math {

// Kokkos 3.4 and 3.5/3.6 keep the math functions in Kokkos::Experimental;
// 3.7 added them to Kokkos:: and 4.x deprecates the old spelling.
#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::isfinite;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif

}  // namespace math

namespace detail {

/// A Kokkos profiling region for the lifetime of the object (Kokkos 4 has
/// Kokkos::Profiling::ScopedRegion; 3.4 does not).
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) {
    Kokkos::Profiling::pushRegion(name);
  }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

/// Number of threads (or concurrent work items) an execution space instance
/// offers; `concurrency()` became a non-static member in Kokkos 4.
template <class ExecutionSpace>
int concurrency(const ExecutionSpace& space) {
#if KOKKOS_VERSION >= 40000
  return space.concurrency();
#else
  (void)space;
  return ExecutionSpace::concurrency();
#endif
}

}  // namespace detail

/// Rewrites a thread-count flag among argv[1 … argc) to the spelling this
/// Kokkos reads, so that either works with every version: Kokkos 3.4 to 3.6
/// know only --kokkos-threads=N, 3.7 deprecates it for
/// --kokkos-num-threads=N and 4.3 no longer knows it. Call before
/// Kokkos::initialize (gradsum::Environment does); the rewritten arguments
/// live to the end of the program. Not thread-safe.
inline void translate_kokkos_thread_flag(int argc, char** argv) {
#if KOKKOS_VERSION >= 30700
  const std::string from = "--kokkos-threads", to = "--kokkos-num-threads";
#else
  const std::string from = "--kokkos-num-threads", to = "--kokkos-threads";
#endif
  static std::deque<std::string> rewritten;  // a deque never moves its strings
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.compare(0, from.size(), from) != 0 || arg.size() == from.size() ||
        arg[from.size()] != '=')
      continue;
    rewritten.push_back(to + arg.substr(from.size()));
    argv[i] = &rewritten.back()[0];
  }
}

}  // namespace gradsum
