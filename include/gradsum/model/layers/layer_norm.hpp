// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Layer normalization (Ba, Kiros and Hinton 2016, as PyTorch's
/// nn.LayerNorm over the last dimension): each row x of width C becomes
///
///     y = (x - mean) / sqrt(var + eps) * w + b,   var = mean((x - mean)^2)
///
/// (the biased variance). With xhat = (x - mean) / sqrt(var + eps) and
/// dy = dout * w, the backward is
///
///     din = (dy - mean(dy) - xhat mean(dy xhat)) / sqrt(var + eps)
///     dw += sum over rows of dout xhat,   db += sum over rows of dout.

#include <gradsum/core/detail/entries.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/model/layer.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {

namespace detail {

/// Rows per chunk of the parameter sums: chunks give a GPU thousands of
/// threads where the columns alone are only C.
constexpr std::int64_t layer_norm_chunk = 32;

/// g[j] += sum_r dout(r, j) xhat(r, j), g[C + j] += sum_r dout(r, j): the
/// sums over each chunk of rows, in order, into `partial` (chunks x 2C),
/// then the chunks' sums added into g in order. The same bits on every
/// space and thread count. Asynchronous.
template <class Space, class In, class Scalar>
void layer_norm_parameters(const Space& space, std::int64_t n, std::int64_t rows, const In& in,
                           const In& dout, Scalar* g, const Scalar* work, Scalar* partial) {
  const std::int64_t chunks = (rows + layer_norm_chunk - 1) / layer_norm_chunk;
  const char* label = "gradsum::layer::layer_norm::parameter_chunks";
  auto chunk_sums = KOKKOS_LAMBDA(std::int64_t c, std::int64_t j0, std::int64_t j1) {
    const std::int64_t last = (c + 1) * layer_norm_chunk < rows ? (c + 1) * layer_norm_chunk : rows;
    Scalar* p = partial + c * 2 * n;
    for (std::int64_t j = j0; j < j1; ++j) p[j] = p[n + j] = Scalar(0);
    for (std::int64_t r = c * layer_norm_chunk; r < last; ++r) {
      const Scalar mean = work[r], inv_std = work[rows + r];
      for (std::int64_t j = j0; j < j1; ++j) {
        p[j] += dout(r, j) * ((in(r, j) - mean) * inv_std);
        p[n + j] += dout(r, j);
      }
    }
  };
  if constexpr (runs_on_host<Space>)
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, chunks),
        KOKKOS_LAMBDA(std::int64_t c) { chunk_sums(c, 0, n); });
  else
    for_each_entry(
        space, label, chunks, n,
        KOKKOS_LAMBDA(std::int64_t c, std::int64_t j) { chunk_sums(c, j, j + 1); });
  for_each_column_block(
      space, "gradsum::layer::layer_norm::parameters", 2 * n,
      KOKKOS_LAMBDA(std::int64_t j0, std::int64_t j1) {
        for (std::int64_t c = 0; c < chunks; ++c)
          for (std::int64_t j = j0; j < j1; ++j) g[j] += partial[c * 2 * n + j];
      });
}

/// din(r) = (dy - mean(dy) - xhat mean(dy xhat)) / sqrt(var + eps) with
/// dy = dout(r) w, a row per index. Asynchronous.
template <class Space, class In, class Out, class Scalar>
void layer_norm_input(const Space& space, int n, const Scalar* w, const In& in, const In& dout,
                      const Out& din, const Scalar* work) {
  const std::int64_t rows = std::int64_t(in.extent(0));
  Kokkos::parallel_for(
      "gradsum::layer::layer_norm::input_gradient",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
      KOKKOS_LAMBDA(std::int64_t r) {
        const Scalar mean = work[r], inv_std = work[rows + r];
        const Scalar* x = &in(r, 0);
        const Scalar* dy = &dout(r, 0);
        const Scalar sum_dy = row_sum<Scalar>(n, [&](std::int64_t j) { return dy[j] * w[j]; });
        const Scalar sum_dy_xhat = row_sum<Scalar>(
            n, [&](std::int64_t j) { return dy[j] * w[j] * ((x[j] - mean) * inv_std); });
        const Scalar a = sum_dy / Scalar(n), c = sum_dy_xhat / Scalar(n);
        Scalar* dx = &din(r, 0);
        for (int j = 0; j < n; ++j)
          dx[j] = inv_std * (dy[j] * w[j] - a - ((x[j] - mean) * inv_std) * c);
      });
}

}  // namespace detail

/// A layer norm of rows of `width` values, with a learned scale and shift
/// per column (parameters: weight [width], then bias [width]). The
/// forward is one fused pass per row that keeps the row's mean and
/// 1/sqrt(var + eps) in the workspace; the backward is one fused pass per
/// row for din, and for the parameters sums over chunks of 32 rows, then
/// over the chunks, each in order (no atomics).
struct LayerNorm {
  /// Values per row, C.
  int width = 0;
  /// Added to the variance, so that a row of equal values (variance 0)
  /// gives the bias rather than NaN.
  double eps = 1e-5;

  /// Throws gradsum::Error for a width below 1 or an eps that is not a
  /// finite positive number.
  void validate() const {
    if (width < 1) fail("gradsum::LayerNorm: width must be at least 1, got ", width);
    if (!(eps > 0) || !math::isfinite(eps))
      fail("gradsum::LayerNorm: eps must be a finite number above 0, got ", eps);
  }
  /// 2 width (the weight, then the bias).
  int num_parameters() const { return 2 * width; }
  int input_width() const { return width; }
  int output_width() const { return width; }
  /// Each row's mean and 1/sqrt(var + eps), and the parameter sums of
  /// each chunk of 32 rows.
  std::size_t workspace_size(Tokens t) const {
    const std::int64_t chunks =
        (t.rows() + detail::layer_norm_chunk - 1) / detail::layer_norm_chunk;
    return std::size_t(2 * t.rows() + chunks * 2 * width);
  }
  /// "layer_norm(C)", or "layer_norm(C,eps=E)" for an eps other than 1e-5.
  std::string describe() const {
    return eps == 1e-5 ? concat("layer_norm(", width, ")")
                       : concat("layer_norm(", width, ",eps=", eps, ")");
  }

  /// out = the normalized rows of `in`, scaled and shifted; the rows'
  /// means and 1/sqrt(var + eps) into work. Asynchronous.
  template <class Space, class Scalar>
  void forward(const Space& space, const Scalar* theta, Tokens t,
               LayerInput<Scalar, typename Space::memory_space> in,
               LayerOutput<Scalar, typename Space::memory_space> out, Scalar* work) const {
    validate();
    const int n = width;
    const std::int64_t rows = t.rows();
    const Scalar e = Scalar(eps);
    Kokkos::parallel_for(
        "gradsum::layer::layer_norm::forward",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
        KOKKOS_LAMBDA(std::int64_t r) {
          const Scalar* x = &in(r, 0);
          // Shifted by the first value: a row of equal values has mean and
          // centred values exactly, so its output is the bias exactly.
          const Scalar mean = x[0] + detail::row_sum<Scalar>(n, [&](std::int64_t j) {
                                       return x[j] - x[0];
                                     }) / Scalar(n);
          const Scalar squares = detail::row_sum<Scalar>(
              n, [&](std::int64_t j) { return (x[j] - mean) * (x[j] - mean); });
          const Scalar inv_std = Scalar(1) / math::sqrt(squares / Scalar(n) + e);
          Scalar* y = &out(r, 0);
          for (int j = 0; j < n; ++j) y[j] = (x[j] - mean) * inv_std * theta[j] + theta[n + j];
          work[r] = mean;
          work[rows + r] = inv_std;
        });
  }

  /// Adds dL/dweight and dL/dbias into g; din (unless null) = dL/din.
  /// Asynchronous.
  template <class Space, class Scalar>
  void backward(const Space& space, const Scalar* theta, Tokens t,
                LayerInput<Scalar, typename Space::memory_space> in,
                LayerInput<Scalar, typename Space::memory_space> /*out*/,
                LayerInput<Scalar, typename Space::memory_space> dout, Scalar* g,
                LayerOutput<Scalar, typename Space::memory_space> din, Scalar* work) const {
    validate();
    detail::layer_norm_parameters(space, width, t.rows(), in, dout, g, work, work + 2 * t.rows());
    if (din.data() != nullptr) detail::layer_norm_input(space, width, theta, in, dout, din, work);
  }
};

}  // namespace gradsum
