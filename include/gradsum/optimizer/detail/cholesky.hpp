// SPDX-License-Identifier: Apache-2.0
#pragma once

// Dense Cholesky factorisation and solve on the host, for Newton steps on
// small parameter counts.

#include <cmath>
#include <cstddef>
#include <vector>

namespace gradsum {
namespace detail {

/// Factors the symmetric n x n row-major matrix A + shift I = L L^T in
/// place of `L` (lower triangle). Returns false if it is not positive
/// definite (a pivot <= 0 or not finite).
inline bool cholesky(const std::vector<double>& A, int n, double shift, std::vector<double>& L) {
  L.assign(A.begin(), A.end());
  for (int j = 0; j < n; ++j) L[std::size_t(j) * n + j] += shift;
  for (int j = 0; j < n; ++j) {
    double d = L[std::size_t(j) * n + j];
    for (int k = 0; k < j; ++k) d -= L[std::size_t(j) * n + k] * L[std::size_t(j) * n + k];
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double root = std::sqrt(d);
    L[std::size_t(j) * n + j] = root;
    for (int i = j + 1; i < n; ++i) {
      double s = L[std::size_t(i) * n + j];
      for (int k = 0; k < j; ++k) s -= L[std::size_t(i) * n + k] * L[std::size_t(j) * n + k];
      L[std::size_t(i) * n + j] = s / root;
    }
  }
  return true;
}

/// Solves L L^T x = b in place of b.
inline void cholesky_solve(const std::vector<double>& L, int n, std::vector<double>& b) {
  for (int i = 0; i < n; ++i) {
    double s = b[std::size_t(i)];
    for (int k = 0; k < i; ++k) s -= L[std::size_t(i) * n + k] * b[std::size_t(k)];
    b[std::size_t(i)] = s / L[std::size_t(i) * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double s = b[std::size_t(i)];
    for (int k = i + 1; k < n; ++k) s -= L[std::size_t(k) * n + i] * b[std::size_t(k)];
    b[std::size_t(i)] = s / L[std::size_t(i) * n + i];
  }
}

}  // namespace detail
}  // namespace gradsum
