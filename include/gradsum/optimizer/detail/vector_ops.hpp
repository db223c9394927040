// SPDX-License-Identifier: Apache-2.0
#pragma once

// Small device-vector operations for line searches and quasi-Newton
// methods. Each is one kernel on the given space; dot() blocks.

#include <gradsum/core/kokkos_compat.hpp>

namespace gradsum {
namespace detail {

/// a . b over [0, n). Blocking.
template <class ExecutionSpace, class A, class B>
double dot(const ExecutionSpace& space, int n, const A& a, const B& b) {
  using Scalar = typename A::non_const_value_type;
  Scalar sum = 0;
  Kokkos::parallel_reduce(
      "gradsum::optimizer::dot", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j, Scalar& acc) { acc += a(j) * b(j); }, sum);
  return double(sum);
}

/// out = x + t d over [0, n). Asynchronous.
template <class ExecutionSpace, class Out, class X, class D>
void add_scaled(const ExecutionSpace& space, int n, const Out& out, const X& x, double t,
                const D& d) {
  using Scalar = typename Out::non_const_value_type;
  const Scalar s = Scalar(t);
  Kokkos::parallel_for(
      "gradsum::optimizer::add_scaled", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j) { out(j) = x(j) + s * d(j); });
}

/// out = a over [0, n). Asynchronous.
template <class ExecutionSpace, class Out, class A>
void assign(const ExecutionSpace& space, int n, const Out& out, const A& a) {
  Kokkos::parallel_for(
      "gradsum::optimizer::assign", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j) { out(j) = a(j); });
}

/// Row r of a state matrix as a vector.
template <class State>
auto row(const State& state, int r) {
  return Kokkos::subview(state, r, Kokkos::ALL());
}

}  // namespace detail
}  // namespace gradsum
