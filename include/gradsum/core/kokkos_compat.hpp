// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Every difference between the Kokkos versions gradsum supports (3.4 through
/// 4.x) lives in this file, so the rest of the library reads the same on all.

#include <Kokkos_Core.hpp>

#include <deque>
#include <string>
#include <type_traits>

#if !defined(KOKKOS_VERSION) || KOKKOS_VERSION < 30400
#error "gradsum needs Kokkos 3.4 or newer"
#endif

namespace gradsum {

/// The math functions of Kokkos, for device code and host code alike,
/// spelled the same on every Kokkos gradsum supports: `gradsum::math::sin(x)`
/// compiles on 3.4, where Kokkos keeps them in Kokkos::Experimental, and on
/// 3.7 through 4.x, which moved them to Kokkos:: and deprecates the old
/// spelling. Each takes float or double (integers promote as in <cmath>;
/// pow(x, 2) is pow(x, 2.0)) and calls the C library on the host, CUDA's or
/// HIP's on a GPU. The list is what Kokkos 3.4 offers: `abs`, `round`,
/// `copysign` and `fma` came later and are not here (`fabs` is).
namespace math {

#if KOKKOS_VERSION >= 30700
#define GRADSUM_IMPL_KOKKOS_MATH Kokkos
#else
#define GRADSUM_IMPL_KOKKOS_MATH Kokkos::Experimental
#endif
// Basic operations, exponentials and powers
using GRADSUM_IMPL_KOKKOS_MATH::fabs;
using GRADSUM_IMPL_KOKKOS_MATH::exp;
using GRADSUM_IMPL_KOKKOS_MATH::exp2;
using GRADSUM_IMPL_KOKKOS_MATH::expm1;
using GRADSUM_IMPL_KOKKOS_MATH::log;
using GRADSUM_IMPL_KOKKOS_MATH::log10;
using GRADSUM_IMPL_KOKKOS_MATH::log2;
using GRADSUM_IMPL_KOKKOS_MATH::log1p;
using GRADSUM_IMPL_KOKKOS_MATH::sqrt;
using GRADSUM_IMPL_KOKKOS_MATH::cbrt;
// Trigonometric and hyperbolic
using GRADSUM_IMPL_KOKKOS_MATH::sin;
using GRADSUM_IMPL_KOKKOS_MATH::cos;
using GRADSUM_IMPL_KOKKOS_MATH::tan;
using GRADSUM_IMPL_KOKKOS_MATH::asin;
using GRADSUM_IMPL_KOKKOS_MATH::acos;
using GRADSUM_IMPL_KOKKOS_MATH::atan;
using GRADSUM_IMPL_KOKKOS_MATH::sinh;
using GRADSUM_IMPL_KOKKOS_MATH::cosh;
using GRADSUM_IMPL_KOKKOS_MATH::tanh;
using GRADSUM_IMPL_KOKKOS_MATH::asinh;
using GRADSUM_IMPL_KOKKOS_MATH::acosh;
using GRADSUM_IMPL_KOKKOS_MATH::atanh;
// Error and gamma functions, rounding, classification
using GRADSUM_IMPL_KOKKOS_MATH::erf;
using GRADSUM_IMPL_KOKKOS_MATH::erfc;
using GRADSUM_IMPL_KOKKOS_MATH::tgamma;
using GRADSUM_IMPL_KOKKOS_MATH::lgamma;
using GRADSUM_IMPL_KOKKOS_MATH::ceil;
using GRADSUM_IMPL_KOKKOS_MATH::floor;
using GRADSUM_IMPL_KOKKOS_MATH::trunc;
using GRADSUM_IMPL_KOKKOS_MATH::nearbyint;
using GRADSUM_IMPL_KOKKOS_MATH::isfinite;
using GRADSUM_IMPL_KOKKOS_MATH::isinf;
using GRADSUM_IMPL_KOKKOS_MATH::isnan;

namespace detail {
template <class T>
using floating_t = std::conditional_t<std::is_integral<T>::value, double, T>;
/// The type <cmath> computes f(T, U) in: double for an integer, the wider
/// of the two floating types otherwise.
template <class T, class U>
using promoted_t = decltype(floating_t<T>() + floating_t<U>());
}  // namespace detail

// The functions of two arguments convert both to their promoted type
// first: Kokkos 3.4's own mixed float/double overloads call themselves
// forever (pow(2.0f, 2.0) overflows the stack).
#define GRADSUM_IMPL_MATH_BINARY(FUNC)                                                     \
  template <class T, class U,                                                              \
            class = std::enable_if_t<std::is_arithmetic<T>::value && std::is_arithmetic<U>::value>> \
  KOKKOS_INLINE_FUNCTION detail::promoted_t<T, U> FUNC(T x, U y) {                         \
    using P = detail::promoted_t<T, U>;                                                    \
    return GRADSUM_IMPL_KOKKOS_MATH::FUNC(P(x), P(y));                                     \
  }
GRADSUM_IMPL_MATH_BINARY(fmod)
GRADSUM_IMPL_MATH_BINARY(remainder)
GRADSUM_IMPL_MATH_BINARY(fmin)
GRADSUM_IMPL_MATH_BINARY(fmax)
GRADSUM_IMPL_MATH_BINARY(fdim)
GRADSUM_IMPL_MATH_BINARY(pow)
GRADSUM_IMPL_MATH_BINARY(hypot)
GRADSUM_IMPL_MATH_BINARY(atan2)
#undef GRADSUM_IMPL_MATH_BINARY
#undef GRADSUM_IMPL_KOKKOS_MATH

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
