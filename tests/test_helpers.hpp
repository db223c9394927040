// SPDX-License-Identifier: Apache-2.0
#pragma once

// Shared test fixtures: random problems, independent host reference
// gradients, per-type tolerances.

#include <gradsum/gradsum.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <string>
#include <tuple>
#include <vector>

namespace gradsum_test {

/// The execution spaces every templated test runs on.
using Spaces = gradsum::ExecutionSpaces;

/// f(static_cast<S*>(nullptr)) for every space S of the tuple, in order:
/// for_each_space(static_cast<Spaces*>(nullptr), [&](auto* tag) { … }).
template <class... S, class F>
void for_each_space(std::tuple<S...>*, F&& f) {
  (f(static_cast<S*>(nullptr)), ...);
}

/// The Dataset type on a backend's memory space (double by default).
template <class Space, class Scalar = double>
using DataOn = gradsum::Dataset<Scalar, typename Space::memory_space>;

/// Relative tolerances kept in one place.
template <class Scalar>
struct Tolerance;
template <>
struct Tolerance<double> {
  static constexpr double partition = 1e-12;
};
template <>
struct Tolerance<float> {
  static constexpr double partition = 2e-5;
};

/// A host problem: n x d features, targets suited to the loss.
struct HostProblem {
  std::int64_t n = 0;
  int d = 0;
  std::vector<double> x, y;
};

enum class Kind { regression, binary, multiclass };

inline HostProblem random_problem(std::int64_t n, int d, Kind kind,
                                  int classes, std::uint64_t seed,
                                  double scale = 1.0) {
  INFO("random problem seed = " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  HostProblem p;
  p.n = n;
  p.d = d;
  p.x.resize(std::size_t(n) * d);
  p.y.resize(std::size_t(n));
  for (auto& v : p.x) v = normal(rng);
  for (std::int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case Kind::regression: p.y[i] = normal(rng); break;
      case Kind::binary: p.y[i] = double(rng() % 2); break;
      case Kind::multiclass: p.y[i] = double(rng() % classes); break;
    }
  }
  return p;
}

inline std::vector<double> random_vector(std::size_t n, std::uint64_t seed,
                                         double scale = 0.5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (auto& e : v) e = normal(rng);
  return v;
}

/// The summed gradient of sum_i l_i written out by hand from the textbook
/// formulas, in long double, independent of the library's kernels.
/// Layout: per output c, d weights then one bias. Returns P values + loss.
inline std::vector<long double> reference_sums(const HostProblem& p, int outputs,
                                               Kind kind,
                                               const std::vector<double>& theta,
                                               std::int64_t begin,
                                               std::int64_t end) {
  const int d = p.d;
  std::vector<long double> g(std::size_t(outputs) * (d + 1) + 1, 0.0L);
  for (std::int64_t i = begin; i < end; ++i) {
    const double* x = &p.x[std::size_t(i) * d];
    std::vector<long double> z(outputs);
    for (int c = 0; c < outputs; ++c) {
      long double s = theta[std::size_t(c) * (d + 1) + d];
      for (int j = 0; j < d; ++j) s += (long double)theta[std::size_t(c) * (d + 1) + j] * x[j];
      z[c] = s;
    }
    std::vector<long double> dz(outputs);
    long double loss = 0;
    if (kind == Kind::regression) {
      dz[0] = z[0] - p.y[i];
      loss = dz[0] * dz[0] / 2;
    } else if (kind == Kind::binary) {
      const long double sig = 1.0L / (1.0L + std::exp(-z[0]));
      dz[0] = sig - p.y[i];
      loss = std::log1p(std::exp(-std::fabs(z[0]))) + (z[0] > 0 ? z[0] : 0) - p.y[i] * z[0];
    } else {
      long double m = z[0];
      for (auto v : z) m = v > m ? v : m;
      long double s = 0;
      for (auto v : z) s += std::exp(v - m);
      const int yi = int(p.y[i]);
      for (int c = 0; c < outputs; ++c) dz[c] = std::exp(z[c] - m) / s - (c == yi ? 1 : 0);
      loss = m + std::log(s) - z[yi];
    }
    for (int c = 0; c < outputs; ++c) {
      for (int j = 0; j < d; ++j) g[std::size_t(c) * (d + 1) + j] += dz[c] * x[j];
      g[std::size_t(c) * (d + 1) + d] += dz[c];
    }
    g.back() += loss;
  }
  return g;
}

/// Relative error ||a - b|| / max(||b||, tiny) of two host vectors.
template <class A, class B>
double relative_distance(const A& a, const B& b, std::size_t n) {
  long double diff = 0, norm = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const long double x = a[j], y = b[j];
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return double(std::sqrt(diff) / (norm > 0 ? std::sqrt(norm) : 1.0L));
}

/// ||a - b|| / ||b|| of two vectors of b's size (||a - b|| when b is 0).
template <class A, class B>
double relative_distance(const A& a, const B& b) {
  return relative_distance(a, b, b.size());
}

/// Solves the dense system A x = b (n x n, row-major) by Gaussian
/// elimination with partial pivoting, independently of the library.
inline std::vector<double> solve(std::vector<double> A, std::vector<double> b) {
  const int n = int(b.size());
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(A[r * n + c]) > std::fabs(A[p * n + c])) p = r;
    for (int k = 0; k < n; ++k) std::swap(A[c * n + k], A[p * n + k]);
    std::swap(b[c], b[p]);
    for (int r = c + 1; r < n; ++r) {
      const double f = A[r * n + c] / A[c * n + c];
      for (int k = c; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= A[r * n + k] * x[k];
    x[r] = s / A[r * n + r];
  }
  return x;
}

/// Host copy of a View as std::vector<double>.
template <class View>
std::vector<double> to_host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.extent(0));
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = double(h(j));
  return out;
}

/// The rows `order` (data-set row numbers) as a RowList in MemorySpace.
template <class MemorySpace>
gradsum::RowList<MemorySpace> row_list(const std::vector<std::int64_t>& order) {
  Kokkos::View<std::int64_t*, MemorySpace> index("index", order.size());
  auto h = Kokkos::create_mirror_view(index);
  for (std::size_t i = 0; i < order.size(); ++i) h(i) = order[i];
  Kokkos::deep_copy(index, h);
  return {index, 0, std::int64_t(order.size())};
}

/// Copies host values into a parameter View.
template <class View>
void fill(const View& v, const std::vector<double>& values) {
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t j = 0; j < values.size(); ++j) h(j) = typename View::non_const_value_type(values[j]);
  Kokkos::deep_copy(v, h);
}

/// Sends every array reduction through the chunked path
/// (reduction/array_reduce.hpp) with `chunks` chunks (0: the path's own
/// choice) while alive, and restores the previous settings on destruction,
/// also when a REQUIRE throws.
class ForceChunks {
 public:
  explicit ForceChunks(std::int64_t chunks) : saved_(gradsum::detail::chunked_reduction_settings()) {
    gradsum::detail::chunked_reduction_settings() = {true, chunks};
  }
  ~ForceChunks() { gradsum::detail::chunked_reduction_settings() = saved_; }
  ForceChunks(const ForceChunks&) = delete;
  ForceChunks& operator=(const ForceChunks&) = delete;

 private:
  gradsum::detail::ChunkedReductionSettings saved_;
};

}  // namespace gradsum_test
