// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/array_reduce.hpp>

#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// Adds x to the compensated pair (s, c) by Neumaier's error-free
/// transformation: s + c gains x, and the rounding error of the new s is
/// carried in c exactly (TwoSum in Neumaier's branching form).
template <class Scalar>
KOKKOS_INLINE_FUNCTION void neumaier_add(Scalar& s, Scalar& c, Scalar x) {
  const Scalar t = s + x;
  const Scalar abs_s = s < Scalar(0) ? -s : s;
  const Scalar abs_x = x < Scalar(0) ? -x : x;
  if (abs_s >= abs_x)
    c += (s - t) + x;
  else
    c += (x - t) + s;
  s = t;
}

/// The Kokkos array reduction behind Compensated. Per coordinate j the
/// accumulator holds a running sum acc[2j] and its compensation acc[2j+1];
/// the last `width` entries are scratch for one sample's contributions.
template <class Scalar, class Body>
struct CompensatedSumFunctor {
  using value_type = Scalar[];
  using size_type = int;  // Kokkos reads value_count through this type
  int value_count;        // 3 * width
  int width;
  Body body;

  KOKKOS_FUNCTION void init(Scalar* acc) const {
    for (int j = 0; j < value_count; ++j) acc[j] = Scalar(0);
  }
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    Scalar* contribution = acc + 2 * width;
    for (int j = 0; j < width; ++j) contribution[j] = Scalar(0);
    body(i, contribution);
    for (int j = 0; j < width; ++j) neumaier_add(acc[2 * j], acc[2 * j + 1], contribution[j]);
  }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    for (int j = 0; j < width; ++j) {
      neumaier_add(dst[2 * j], dst[2 * j + 1], src[2 * j]);
      dst[2 * j + 1] += src[2 * j + 1];
    }
  }
#if KOKKOS_VERSION < 40000
  // Kokkos 3.x recognises only a join with volatile arguments, and replaces
  // a join it does not recognise by an element-wise sum without a word.
  KOKKOS_FUNCTION void join(volatile Scalar* dst, const volatile Scalar* src) const {
    for (int j = 0; j < width; ++j) {
      Scalar s = dst[2 * j], c = dst[2 * j + 1];
      neumaier_add(s, c, Scalar(src[2 * j]));
      dst[2 * j] = s;
      dst[2 * j + 1] = c + src[2 * j + 1];
    }
  }
#endif
};

/// CompensatedSumFunctor whose `final` writes s + c into `out`, so the
/// (s, c) pairs need no buffer of the caller's.
template <class Scalar, class Body, class OutView>
struct CompensatedFold : CompensatedSumFunctor<Scalar, Body> {
  OutView out;
  KOKKOS_FUNCTION void final(Scalar* acc) const {
    for (int j = 0; j < this->width; ++j) out(j) = acc[2 * j] + acc[2 * j + 1];
  }
};

}  // namespace detail

/// In-process reduction by compensated summation (Kahan-Babuska, in
/// Neumaier's form): each thread keeps, per coordinate, a running sum s and
/// a compensation c that collects the exact rounding error of every
/// addition into s (an error-free transformation); per-thread pairs are
/// joined the same way and the result is s + c, rounded once to Scalar.
///
/// Error bound (Ogita, Rump & Oishi, "Accurate sum and dot product",
/// SIAM J. Sci. Comput. 26(6), 2005, Prop. 4.5, for this algorithm, which is
/// their Sum2; N. J. Higham, Accuracy and Stability of Numerical
/// Algorithms, 2nd ed., §4.3): for n contributions x_i with exact sum S and
/// u the unit roundoff of Scalar (2^-53 for double, 2^-24 for float),
///
///     |result - S| <= u |S| + gamma_(n-1)^2 sum |x_i|,
///     gamma_k = k u / (1 - k u),
///
/// that is, as accurate as summing in twice the working precision and
/// then rounding, while plain summation (Sum) only guarantees
/// gamma_(n-1) sum |x_i|. Worth it for float data and for sums with heavy
/// cancellation. Costs about four extra floating-point operations per
/// contribution and twice the accumulator size. Not bitwise reproducible
/// across thread counts (use Reproducible for that).
///
/// The bound needs the compiler to keep the floating-point operations as
/// written: no -ffast-math (which lets it cancel (s - t) + x to 0).
struct Compensated {
  /// Short name used in messages and command lines.
  static const char* name() { return "compensated"; }

  /// Sums body(i, acc) over i in [0, n) into out(0 … width), with the same
  /// contract as Sum::reduce: `body(i, acc)` adds sample i's `width`
  /// contributions into `acc`; `out` is a rank-1 View the execution space
  /// can access with at least `width` entries, overwritten. Asynchronous
  /// with respect to the host; fence `space` before reading `out` there.
  /// Allocates nothing of its own, except where the accumulator is too
  /// wide for a GPU's threads (detail::array_reduce: then it blocks and
  /// grows a workspace kept between calls when it is too small for them).
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView& out) const {
    using Scalar = typename OutView::non_const_value_type;
    detail::array_reduce(
        space, label, n,
        detail::CompensatedFold<Scalar, Body, OutView>{{3 * width, width, body}, out});
  }
};

}  // namespace gradsum
