// SPDX-License-Identifier: Apache-2.0
// gradsum::math (core/kokkos_compat.hpp) on every enabled space against the
// standard library on the host: every function, float and double, at
// arguments inside each one's domain, and the mixed argument types
// (pow(x, 2)) that <cmath> promotes.

#include "test_helpers.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace gradsum_test;

namespace {

constexpr int unary_count = 31, binary_count = 8;

// Unary function f of gradsum::math at x; the order is that of std_unary.
template <class T>
KOKKOS_FUNCTION T math_unary(int f, T x) {
  namespace m = gradsum::math;
  switch (f) {
    case 0: return m::fabs(x);
    case 1: return m::exp(x);
    case 2: return m::exp2(x);
    case 3: return m::expm1(x);
    case 4: return m::log(x + T(2));
    case 5: return m::log10(x + T(2));
    case 6: return m::log2(x + T(2));
    case 7: return m::log1p(m::fabs(x));
    case 8: return m::sqrt(x + T(2));
    case 9: return m::cbrt(x);
    case 10: return m::sin(x);
    case 11: return m::cos(x);
    case 12: return m::tan(x);
    case 13: return m::asin(x / T(2));
    case 14: return m::acos(x / T(2));
    case 15: return m::atan(x);
    case 16: return m::sinh(x);
    case 17: return m::cosh(x);
    case 18: return m::tanh(x);
    case 19: return m::asinh(x);
    case 20: return m::acosh(m::fabs(x) + T(1));
    case 21: return m::atanh(x / T(2));
    case 22: return m::erf(x);
    case 23: return m::erfc(x);
    case 24: return m::tgamma(x + T(2));
    case 25: return m::lgamma(x + T(2));
    case 26: return m::ceil(x);
    case 27: return m::floor(x);
    case 28: return m::trunc(x);
    case 29: return m::nearbyint(x);
    default: {  // x / 0: an infinity, or NaN for x = 0
      const T z = x / (x - x);
      return T(m::isfinite(z)) + T(2) * T(m::isinf(z)) + T(4) * T(m::isnan(z));
    }
  }
}

template <class T>
T std_unary(int f, T x) {
  switch (f) {
    case 0: return std::fabs(x);
    case 1: return std::exp(x);
    case 2: return std::exp2(x);
    case 3: return std::expm1(x);
    case 4: return std::log(x + T(2));
    case 5: return std::log10(x + T(2));
    case 6: return std::log2(x + T(2));
    case 7: return std::log1p(std::fabs(x));
    case 8: return std::sqrt(x + T(2));
    case 9: return std::cbrt(x);
    case 10: return std::sin(x);
    case 11: return std::cos(x);
    case 12: return std::tan(x);
    case 13: return std::asin(x / T(2));
    case 14: return std::acos(x / T(2));
    case 15: return std::atan(x);
    case 16: return std::sinh(x);
    case 17: return std::cosh(x);
    case 18: return std::tanh(x);
    case 19: return std::asinh(x);
    case 20: return std::acosh(std::fabs(x) + T(1));
    case 21: return std::atanh(x / T(2));
    case 22: return std::erf(x);
    case 23: return std::erfc(x);
    case 24: return std::tgamma(x + T(2));
    case 25: return std::lgamma(x + T(2));
    case 26: return std::ceil(x);
    case 27: return std::floor(x);
    case 28: return std::trunc(x);
    case 29: return std::nearbyint(x);
    default: {
      const T z = x / (x - x);
      return T(std::isfinite(z)) + T(2) * T(std::isinf(z)) + T(4) * T(std::isnan(z));
    }
  }
}

template <class T>
KOKKOS_FUNCTION T math_binary(int f, T x, T y) {
  namespace m = gradsum::math;
  switch (f) {
    case 0: return m::fmin(x, y);
    case 1: return m::fmax(x, y);
    case 2: return m::fmod(x, y);
    case 3: return m::remainder(x, y);
    case 4: return m::fdim(x, y);
    case 5: return m::pow(m::fabs(x) + T(0.5), y);
    case 6: return m::hypot(x, y);
    default: return m::atan2(x, y);
  }
}

template <class T>
T std_binary(int f, T x, T y) {
  switch (f) {
    case 0: return std::fmin(x, y);
    case 1: return std::fmax(x, y);
    case 2: return std::fmod(x, y);
    case 3: return std::remainder(x, y);
    case 4: return std::fdim(x, y);
    case 5: return std::pow(std::fabs(x) + T(0.5), y);
    case 6: return std::hypot(x, y);
    default: return std::atan2(x, y);
  }
}

// Arguments in (-1.9, 1.9) (every function above is defined there, with
// its shifts), signs, zeros and halves for the rounding functions.
template <class T>
std::vector<T> arguments() {
  std::vector<T> x = {T(0), T(-0.0), T(0.5), T(-0.5), T(1.5), T(-1.5), T(1), T(-1)};
  for (int i = 0; i < 40; ++i) x.push_back(T(-1.9 + 3.8 * (i + 0.37) / 40));
  return x;
}

// The device's C library may differ from the host's in the last bits:
// a few units of the type's epsilon, relative to the value (or to 1).
template <class T>
void check_close(T got, T want, const char* what, int f, T x, T y = T(0)) {
  const double tolerance = 8 * double(std::numeric_limits<T>::epsilon()) *
                           std::fmax(1.0, std::fabs(double(want)));
  INFO(std::string(what) << " function " << f << " at x = " << x << ", y = " << y << ": got " << got
            << ", std gives " << want);
  CHECK(std::fabs(double(got) - double(want)) <= tolerance);
}

template <class Space, class T>
void check_functions() {
  const auto args = arguments<T>();
  const int n = int(args.size());
  Kokkos::View<T*, typename Space::memory_space> x("x", n), unary("unary", unary_count * n),
      binary("binary", binary_count * n * n);
  Kokkos::deep_copy(x, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                           args.data(), args.size()));
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, n), KOKKOS_LAMBDA(int i) {
        for (int f = 0; f < unary_count; ++f) unary(f * n + i) = math_unary(f, x(i));
        for (int j = 0; j < n; ++j)
          for (int f = 0; f < binary_count; ++f)
            binary((f * n + i) * n + j) = math_binary(f, x(i), x(j) == T(0) ? T(1) : x(j));
      });
  const auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), unary);
  const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), binary);
  for (int f = 0; f < unary_count; ++f)
    for (int i = 0; i < n; ++i)
      check_close(u(f * n + i), std_unary(f, args[i]), "unary", f, args[i]);
  for (int f = 0; f < binary_count; ++f)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const T y = args[j] == T(0) ? T(1) : args[j];
        check_close(b((f * n + i) * n + j), std_binary(f, args[i], y), "binary", f, args[i], y);
      }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("gradsum::math matches the standard library", Space, math_matches_std) {
  check_functions<Space, double>();
  check_functions<Space, float>();
}
TEST_CASE_TEMPLATE_APPLY(math_matches_std, Spaces);

TEST_CASE("gradsum::math promotes mixed arguments as <cmath> does") {
  namespace m = gradsum::math;
  // An integer counts as a double; float with double is double (Kokkos 3.4
  // recursed forever on float with double).
  static_assert(std::is_same<decltype(m::pow(2.0f, 2)), double>::value, "");
  static_assert(std::is_same<decltype(m::pow(2.0f, 2.0f)), float>::value, "");
  static_assert(std::is_same<decltype(m::atan2(1, 2.0)), double>::value, "");
  static_assert(std::is_same<decltype(m::fmax(1.0f, 2.0)), double>::value, "");
  static_assert(std::is_same<decltype(m::sin(1.0f)), float>::value, "");
  static_assert(std::is_same<decltype(m::sin(1)), double>::value, "");
  CHECK(m::pow(3.0, 2) == 9.0);
  CHECK(m::pow(2.0f, 0.5) == std::pow(2.0, 0.5));
  CHECK(m::atan2(1, 1.0) == std::atan2(1.0, 1.0));
  CHECK(m::fmin(2, 1.5f) == 1.5);
  CHECK(m::fmin(0.1f, 0.1) == 0.1);  // the double: 0.1f rounds up
  CHECK(m::hypot(3, 4) == 5.0);
}
