// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The binned reduction's per-thread state for w coordinates: windows,
/// limits, floating-point and int64 bins in one int64 buffer, and the
/// operations on one coordinate.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/reduction/detail/binned.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace gradsum {
namespace detail {

/// To with the const and volatile qualifiers of From.
template <class From, class To>
struct copy_cv { using type = To; };
template <class From, class To>
struct copy_cv<const From, To> { using type = const To; };
template <class From, class To>
struct copy_cv<volatile From, To> { using type = volatile To; };
template <class From, class To>
struct copy_cv<const volatile From, To> { using type = const volatile To; };

/// The largest Scalar at most `limit` (double: itself): for a Scalar c,
/// |c| <= limit exactly when |c| <= limit_as<Scalar>(limit).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar limit_as(double limit) {
  Scalar s = Scalar(limit);
  if constexpr (sizeof(Scalar) == sizeof(float)) {
    if (double(s) > limit) {  // rounded up (to infinity too): one step down
      std::uint32_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      bits -= 1;  // s > limit >= 0 here
      std::memcpy(&s, &bits, sizeof s);
    }
  }
  return s;
}

/// Slots (of int64) of the reduction's work buffer for `width`
/// coordinates: the state of the floating-point deposit, whose first
/// binned_width * width slots hold the integer-format accumulators when the
/// reduction is done.
KOKKOS_INLINE_FUNCTION constexpr std::size_t binned_work_size(std::size_t width) {
  return 9 * width + 1;
}

/// S_B's starting value M_B = 1.5 2^(52 + 32 B) for bin b (B = t - b) of a
/// window the floating-point deposit serves; 1.5 (spacing 2^-52) for the
/// others, whose S only ever receives zeros (empty) or nothing that counts.
KOKKOS_INLINE_FUNCTION double bin_start(std::int64_t t, int b) {
  return fast_window(t) ? 1.5 * pow2(int(52 + bin_bits * (t - b))) : 1.5;
}

/// The reduction's state for `w` coordinates, structure of arrays in one
/// int64 buffer so that a sample's deposit runs over contiguous arrays:
/// windows T; limits as Scalar (a contribution c fits window T if |c| <=
/// limit: the largest Scalar below 2^(32 T + 31); 0 when empty, -1 for the
/// windows the floating-point deposit does not serve, infinity when
/// poisoned); the floating-point bins S_B for B = T, T-1, T-2; the int64
/// bins; the count of samples since the last flush; room for one sample's
/// contributions. Every region is read and written as one type.
template <class Pointer, class Scalar>
struct BinnedState {
  Pointer base;
  int w;

  template <class T>
  KOKKOS_INLINE_FUNCTION auto region(int k) const {
    using Target = typename copy_cv<std::remove_pointer_t<Pointer>, T>::type;
    return reinterpret_cast<Target*>(base + std::size_t(k) * w);
  }
  KOKKOS_INLINE_FUNCTION auto top() const { return base; }
  KOKKOS_INLINE_FUNCTION auto limit() const { return region<Scalar>(1); }
  KOKKOS_INLINE_FUNCTION auto fp_bin(int b) const { return region<double>(2 + b); }
  KOKKOS_INLINE_FUNCTION auto int_bin(int b) const { return base + std::size_t(5 + b) * w; }
  KOKKOS_INLINE_FUNCTION auto count() const { return base + std::size_t(8) * w; }
  KOKKOS_INLINE_FUNCTION auto scratch() const { return base + std::size_t(8) * w + 1; }

  /// Window t for coordinate j: its limit and its floating-point bins'
  /// starting values (their content must be in the int64 bins already).
  KOKKOS_INLINE_FUNCTION void set_window(int j, std::int64_t t) const {
    top()[j] = t;
    double lim = -1;
    if (t == empty_window) {
      lim = 0;
    } else if (t == poisoned_window) {
      const std::uint64_t inf = 0x7ff0000000000000ULL;
      std::memcpy(&lim, &inf, sizeof lim);
    } else if (fast_window(t)) {
      const double bound = pow2(int(bin_bits * t + bin_bits - 1));  // 2^(32 T + 31)
      std::uint64_t bits;
      std::memcpy(&bits, &bound, sizeof bits);
      bits -= 1;  // the largest double below it
      std::memcpy(&lim, &bits, sizeof lim);
    }
    limit()[j] = limit_as<Scalar>(lim);
    for (int b = 0; b < bins_per_window; ++b) fp_bin(b)[j] = bin_start(t, b);
  }

  /// Coordinate j in integer format (its floating-point bins moved in).
  KOKKOS_INLINE_FUNCTION void load(int j, std::int64_t* acc) const {
    const std::int64_t t = top()[j];
    acc[0] = t;
    for (int b = 0; b < bins_per_window; ++b) {
      acc[1 + b] = int_bin(b)[j];
      if (fast_window(t))
        acc[1 + b] +=
            std::int64_t(scale2(fp_bin(b)[j] - bin_start(t, b), -int(bin_bits * (t - b))));
    }
  }

  /// Stores coordinate j from integer format, floating-point bins restarted.
  KOKKOS_INLINE_FUNCTION void store(int j, const std::int64_t* acc) const {
    set_window(j, acc[0]);
    for (int b = 0; b < bins_per_window; ++b)
      int_bin(b)[j] = acc[0] == poisoned_window ? 0 : acc[1 + b];
  }

  /// Moves every coordinate's floating-point bins into its int64 bins.
  KOKKOS_INLINE_FUNCTION void flush() const {
    for (int j = 0; j < w; ++j) {
      std::int64_t acc[binned_width];
      load(j, acc);
      store(j, acc);
    }
    *count() = 0;
  }

  /// The floating-point deposit of r into coordinate j (|r| <= its limit);
  /// the same operations as deposit_sample's loop.
  KOKKOS_INLINE_FUNCTION void deposit(int j, double r) const {
    deposit_value(r, fp_bin(0)[j], fp_bin(1)[j], fp_bin(2)[j]);
  }

  /// Adds the contribution c to coordinate j, whatever it is: the
  /// floating-point deposit if it fits the window, else add_outside.
  KOKKOS_INLINE_FUNCTION void add(int j, Scalar c) const {
    if (math::fabs(c) <= limit()[j])
      deposit(j, double(c));
    else
      add_outside(j, double(c));
  }

  /// Adds v to coordinate j when it does not fit the window's limit: a
  /// window raise (after moving the floating-point bins out), the first
  /// value, a NaN or infinity, or a window the floating-point deposit does
  /// not serve.
  KOKKOS_INLINE_FUNCTION void add_outside(int j, double v) const {
    std::int64_t acc[binned_width];
    load(j, acc);
    binned_add(acc, v);
    store(j, acc);
  }
};

}  // namespace detail
}  // namespace gradsum
