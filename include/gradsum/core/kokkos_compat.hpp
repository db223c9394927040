// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Every difference between the Kokkos versions gradsum supports (3.4 through
/// 4.x) lives in this file, so the rest of the library reads the same on all.

#include <Kokkos_Core.hpp>

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
}  // namespace gradsum
