// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/sampler.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace gradsum {

/// What a point with a (near) zero gradient is, judged by the extreme
/// eigenvalues of the Hessian there (second-order conditions: Nocedal &
/// Wright, Numerical Optimization, 2nd ed., thm. 2.3-2.4).
enum class CriticalPoint {
  minimum,  ///< no eigenvalue below -tolerance, one above +tolerance
  maximum,  ///< no eigenvalue above +tolerance, one below -tolerance
  saddle,   ///< eigenvalues of both signs beyond the tolerance
  flat      ///< every eigenvalue within the tolerance: a plateau
};

/// "minimum", "maximum", "saddle point" or "flat region".
inline const char* describe(CriticalPoint p) {
  switch (p) {
    case CriticalPoint::minimum: return "minimum";
    case CriticalPoint::maximum: return "maximum";
    case CriticalPoint::saddle: return "saddle point";
    case CriticalPoint::flat: break;
  }
  return "flat region";
}

/// The extreme eigenvalues of a Hessian and how they were found.
struct Curvature {
  double min_eigenvalue = 0;
  double max_eigenvalue = 0;
  bool exact = false;  ///< from the full matrix (else Lanczos estimates)
  int products = 0;    ///< Hessian-vector products Lanczos used
};

/// Minimum, maximum, saddle or flat, with `tolerance` >= 0 separating zero
/// curvature from positive and negative.
inline CriticalPoint classify(const Curvature& c, double tolerance) {
  if (!(tolerance >= 0))
    fail("gradsum::classify: tolerance must be >= 0, got ", tolerance);
  const bool down = c.min_eigenvalue < -tolerance, up = c.max_eigenvalue > tolerance;
  if (down && up) return CriticalPoint::saddle;
  if (up) return CriticalPoint::minimum;
  if (down) return CriticalPoint::maximum;
  return CriticalPoint::flat;
}

/// All eigenvalues of the symmetric n x n row-major matrix A, ascending,
/// by cyclic Jacobi rotations (Golub & Van Loan, Matrix Computations,
/// 4th ed., sec. 8.5): slow, O(n^3) per sweep, and accurate; for the small
/// matrices of exact classification and of Lanczos. Throws when A is not
/// n x n or not symmetric.
inline std::vector<double> symmetric_eigenvalues(std::vector<double> A, int n) {
  if (n < 0 || A.size() != std::size_t(n) * std::size_t(n))
    fail("gradsum::symmetric_eigenvalues: expected ", n, " x ", n,
                 " values, got ", A.size());
  auto at = [&](int i, int j) -> double& { return A[std::size_t(i) * std::size_t(n) + j]; };
  double scale = 0;
  for (double v : A) scale = std::max(scale, std::fabs(v));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (std::fabs(at(i, j) - at(j, i)) > 1e-8 * std::max(scale, 1e-300))
        fail("gradsum::symmetric_eigenvalues: the matrix is not symmetric "
                     "(entry (", i, ", ", j, ") is ", at(i, j), ", entry (", j, ", ", i, ") is ",
                     at(j, i), ")");
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) off += at(i, j) * at(i, j);
    if (off <= 1e-30 * std::max(scale * scale, 1e-300)) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        if (at(p, q) == 0) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) {  // columns p, q
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // rows p, q
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> eigenvalues(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) eigenvalues[std::size_t(i)] = at(i, i);
  std::sort(eigenvalues.begin(), eigenvalues.end());
  return eigenvalues;
}

/// The exact extreme eigenvalues of a P x P row-major Hessian.
inline Curvature curvature_from_hessian(const std::vector<double>& H, int P) {
  const auto e = symmetric_eigenvalues(H, P);
  Curvature c;
  c.exact = true;
  if (!e.empty()) {
    c.min_eigenvalue = e.front();
    c.max_eigenvalue = e.back();
  }
  return c;
}

/// Estimates of the extreme eigenvalues of a symmetric P x P operator
/// given only its products, `product(v, out)` writing H v into out, by
/// `steps` steps of Lanczos with full reorthogonalization from a seeded
/// random start (Golub & Van Loan sec. 10.1). The extreme Ritz values
/// converge first and from inside: min is an upper bound on the smallest
/// eigenvalue and max a lower bound on the largest. Cost: min(steps, P)
/// products and O(P steps^2) host work.
template <class Product>
Curvature curvature_lanczos(Product&& product, int P, int steps = 30, std::uint64_t seed = 1) {
  if (P < 1) fail("gradsum::curvature_lanczos: P must be >= 1, got ", P);
  if (steps < 1)
    fail("gradsum::curvature_lanczos: steps must be >= 1, got ", steps);
  const int m = std::min(steps, P);
  std::vector<std::vector<double>> Q;
  std::vector<double> alpha, beta;
  std::vector<double> q(static_cast<std::size_t>(P));
  std::vector<double> w(static_cast<std::size_t>(P));
  detail::SplitMix64 rng(seed);
  double norm = 0;
  for (auto& v : q) {
    v = double(rng.next() >> 11) * 0x1.0p-53 - 0.5;
    norm += v * v;
  }
  for (auto& v : q) v /= std::sqrt(norm);
  Curvature c;
  for (int k = 0; k < m; ++k) {
    Q.push_back(q);
    product(static_cast<const std::vector<double>&>(q), w);
    ++c.products;
    double a = 0;
    for (int i = 0; i < P; ++i) a += w[std::size_t(i)] * q[std::size_t(i)];
    alpha.push_back(a);
    // Full reorthogonalization (twice is enough) against every basis vector.
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& u : Q) {
        double d = 0;
        for (int i = 0; i < P; ++i) d += w[std::size_t(i)] * u[std::size_t(i)];
        for (int i = 0; i < P; ++i) w[std::size_t(i)] -= d * u[std::size_t(i)];
      }
    double b = 0;
    for (double v : w) b += v * v;
    b = std::sqrt(b);
    if (k + 1 == m || !(b > 1e-12 * (std::fabs(a) + 1e-300))) break;  // invariant subspace
    beta.push_back(b);
    for (int i = 0; i < P; ++i) q[std::size_t(i)] = w[std::size_t(i)] / b;
  }
  const int n = int(alpha.size());
  std::vector<double> T(std::size_t(n) * std::size_t(n), 0.0);
  for (int i = 0; i < n; ++i) {
    T[std::size_t(i) * n + i] = alpha[std::size_t(i)];
    if (i + 1 < n) T[std::size_t(i) * n + i + 1] = T[std::size_t(i + 1) * n + i] = beta[std::size_t(i)];
  }
  const auto e = symmetric_eigenvalues(T, n);
  c.min_eigenvalue = e.front();
  c.max_eigenvalue = e.back();
  c.exact = false;
  return c;
}

/// A Hessian-vector product from gradients alone: H v ~ (g(x + h v) -
/// g(x - h v)) / (2 h), with `gradient(point, out)` writing the gradient at
/// a point; error O(h^2) times the third derivatives (Pearlmutter, Neural
/// Computation 6(1), 1994, sec. 2). Two gradient evaluations per product.
template <class Gradient>
auto finite_difference_product(Gradient&& gradient, std::vector<double> x, double h = 1e-4) {
  if (!(h > 0)) fail("gradsum::finite_difference_product: h must be > 0, got ", h);
  return [gradient, x = std::move(x), h](const std::vector<double>& v, std::vector<double>& out) mutable {
    const std::size_t P = x.size();
    std::vector<double> point(P), plus(P), minus(P);
    for (std::size_t i = 0; i < P; ++i) point[i] = x[i] + h * v[i];
    gradient(static_cast<const std::vector<double>&>(point), plus);
    for (std::size_t i = 0; i < P; ++i) point[i] = x[i] - h * v[i];
    gradient(static_cast<const std::vector<double>&>(point), minus);
    out.resize(P);
    for (std::size_t i = 0; i < P; ++i) out[i] = (plus[i] - minus[i]) / (2 * h);
  };
}

/// How curvature() finds the extreme eigenvalues.
struct CurvatureOptions {
  /// Up to this many parameters the exact Hessian is formed and
  /// diagonalized, when the model and loss provide it.
  int max_exact = 300;
  int lanczos_steps = 30;   ///< Lanczos steps otherwise
  double h = 1e-4;          ///< finite-difference step of the products
  std::uint64_t seed = 1;   ///< Lanczos start vector
};

/// The extreme Hessian eigenvalues of the step's objective J at `theta` over
/// `rows`: exact from step.hessian() when the model and loss provide it and
/// P <= max_exact, else Lanczos on finite-difference Hessian-vector products
/// from step.evaluate() (2 per Lanczos step, each a pass over the data).
/// Blocking; collective (every worker runs the same evaluations). Leaves
/// step.gradient() holding the gradient at some nearby point.
template <class Step, class Theta, class Data, class Rows>
Curvature curvature(Step& step, const Theta& theta, const Data& data, const Rows& rows,
                    const CurvatureOptions& options = {}) {
  const int P = step.num_parameters();
  if constexpr (Step::has_hessian) {
    if (P <= options.max_exact) return curvature_from_hessian(step.hessian(theta, data, rows), P);
  }
  auto point = step.make_parameters();
  auto host_point = Kokkos::create_mirror_view(point);
  auto host_theta = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  std::vector<double> x(host_theta.data(), host_theta.data() + P);
  auto gradient = [&step, &data, &rows, point, host_point](const std::vector<double>& at,
                                                           std::vector<double>& out) {
    for (std::size_t j = 0; j < at.size(); ++j)
      host_point(j) = typename Step::scalar_type(at[j]);
    Kokkos::deep_copy(point, host_point);
    step.evaluate(point, data, rows);
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.gradient());
    out.assign(g.data(), g.data() + g.extent(0));
  };
  return curvature_lanczos(finite_difference_product(gradient, std::move(x), options.h), P,
                           options.lanczos_steps, options.seed);
}

}  // namespace gradsum
