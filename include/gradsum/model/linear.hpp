// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/prefetch.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/detail/row_dot.hpp>

#include <string>
#include <type_traits>

#ifndef GRADSUM_LINEAR_BLOCK
/// Samples per block on the linear model's batched path. The loss's exp
/// and log1p are long dependency chains; a block gives the compiler
/// independent SIMD lanes to hide them in. Rows of 256 bytes or more are
/// taken half a block at a time, so that the rows read for the logits are
/// still in the L1 cache for the update (bench_gradient, one thread,
/// -march=native, M samples/s: logistic float d = 32, 118 with blocks of
/// 16, 140 with 32; d = 256 and 1024 slower in sub-blocks of 8 than 16,
/// linear float d = 64 5% slower in blocks of 32 than 16; the x86-64
/// baseline build gains nothing from 32 and loses nothing).
#define GRADSUM_LINEAR_BLOCK 32
#endif

namespace gradsum {

/// Linear model with one output: z = w . x + b.
///
/// With SquaredError it is linear regression, with BinaryCrossEntropy
/// logistic regression (z is the logit). Parameters are laid out as
/// [w_0 … w_{d-1}, b]; the bias is not regularised.
///
/// Two ways to the same gradient: per sample, and batched, for losses
/// with a block form (BinaryCrossEntropy, SquaredError): the logits of
/// GRADSUM_LINEAR_BLOCK samples, then their loss in one loop the compiler
/// vectorizes, then their gradients. The Analytic gradient takes the
/// batched path on host spaces when `batched` is true (the default). A
/// reduction that needs each sample's contribution on its own
/// (Reproducible) gets them from block_residuals: every sample's dl/dz and
/// loss, from the same block arithmetic. GPUs keep the per-sample path,
/// and so does a class derived from Linear (its own forward or backward
/// would be bypassed).
class Linear {
 public:
  /// Samples per block on the batched path.
  static constexpr int block_size = GRADSUM_LINEAR_BLOCK;

  /// A model for 1 <= `num_features` < 2^31 - 1 input features (the
  /// parameter count, with the bias, must fit an int).
  explicit Linear(int num_features) : d_(num_features) {
    if (num_features < 1 || num_features > 2147483646)
      detail::fail("gradsum::Linear: num_features must be in [1, 2147483646] (the ",
                   "parameter count, with the bias, must fit an int), got ", num_features);
  }

  /// Whether the Analytic gradient may take the batched path (see above).
  bool batched = true;

  /// Per-sample output arrays need room for one value only.
  static constexpr int output_capacity = 1;

  /// Short name used in messages.
  static const char* name() { return "linear"; }
  /// Input width d.
  KOKKOS_FUNCTION int num_features() const { return d_; }
  /// One output.
  KOKKOS_FUNCTION int num_outputs() const { return 1; }
  /// d weights and one bias.
  KOKKOS_FUNCTION int num_parameters() const { return d_ + 1; }
  /// Everything but the bias takes the L2 penalty.
  KOKKOS_FUNCTION bool is_regularized(int j) const { return j < d_; }

  /// z[0] = w . x + b for one sample x[0..d).
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x,
                               Scalar* z) const {
    // Rows of 256 bytes or more get 128 bytes of partial sums, shorter
    // rows 32 bytes (bench_gradient, logistic, float, one thread: d = 32
    // runs 1.4x faster with 32 bytes than with 128 under -march=native on
    // AVX-512, d = 256 twice as fast with 128 than with 32).
    if (long_rows<Scalar>())
      z[0] = theta[d_] + detail::row_dot<long_row_sums<Scalar>>(theta, x, d_);
    else
      z[0] = theta[d_] + detail::row_dot<short_row_sums<Scalar>>(theta, x, d_);
  }

  /// g += dz[0] * (x, 1): the gradient of dz . z with respect to (w, b).
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* /*theta*/, const Scalar* x,
                                const Scalar* dz, Scalar* g) const {
    const Scalar r = dz[0];
    for (int j = 0; j < d_; ++j) g[j] += r * x[j];
    g[d_] += r;
  }

  /// Batched gradient over m <= block_size samples xs[s] with targets
  /// ys[s]: g += the sum of their gradients; returns the sum of their
  /// losses. Only for losses with a block form (the trait
  /// detail::has_block_value_and_derivative); sample by sample it is the
  /// arithmetic of forward, the loss, backward, except for the loss's own
  /// vectorizable exp and log1p.
  ///
  /// `ahead(s)` is called for each sample s < m as its logit is computed:
  /// the caller may ask for a later block's rows there, a row at a time
  /// (detail::NoPrefetch, the default, asks for nothing).
  template <class Loss, class Scalar, class Ahead = detail::NoPrefetch,
            class = std::enable_if_t<
                detail::has_block_value_and_derivative<Loss, Scalar, block_size>::value>>
  KOKKOS_FUNCTION Scalar block_gradient(const Loss& loss, const Scalar* theta,
                                        const Scalar* const* xs, const Scalar* ys, int m,
                                        Scalar* g, const Ahead& ahead = Ahead{}) const {
    constexpr int B = block_size;
    constexpr int half = B / 2 > 0 ? B / 2 : 1;
    if (!long_rows<Scalar>())
      return sub_block_gradient<B, false>(loss, theta, xs, ys, m, g, ahead, 0);
    Scalar total = 0;
    for (int s = 0; s < m; s += half)
      total += sub_block_gradient<half, true>(loss, theta, xs + s, ys + s,
                                              m - s < half ? m - s : half, g, ahead, s);
    return total;
  }

  /// The batched path for reductions that need each sample's contribution
  /// on its own (Reproducible): for m <= block_size samples, dl/dz of
  /// sample s into dz[s] and its loss into value[s] (s < m; the rest is
  /// padding). Sample s's gradient is dz[s] (x_s, 1): what backward() adds.
  /// Every sample's results are those of block_gradient's arithmetic,
  /// whatever its place in the block.
  template <class Loss, class Scalar,
            class = std::enable_if_t<
                detail::has_block_value_and_derivative<Loss, Scalar, block_size>::value>>
  KOKKOS_FUNCTION void block_residuals(const Loss& loss, const Scalar* theta,
                                       const Scalar* const* xs, const Scalar* ys, int m,
                                       Scalar* dz, Scalar* value) const {
    constexpr int B = block_size;
    Scalar z[B] = {}, y[B] = {};
    if (long_rows<Scalar>())
      logits<true>(theta, xs, ys, m, z, y, detail::NoPrefetch{}, 0);
    else
      logits<false>(theta, xs, ys, m, z, y, detail::NoPrefetch{}, 0);
    loss.template block_values_and_derivatives<B>(z, y, value, dz);
  }

  /// H += d2[0] * (x, 1)(x, 1)^T: the Hessian of the loss through this
  /// sample, given d^2 l / dz^2 in `d2`; H is P x P, row-major.
  template <class Scalar>
  KOKKOS_FUNCTION void hessian(const Scalar* /*theta*/, const Scalar* x,
                               const Scalar* d2, Scalar* H) const {
    const int P = d_ + 1;
    for (int j = 0; j < P; ++j) {
      const Scalar xj = d2[0] * (j < d_ ? x[j] : Scalar(1));
      for (int l = 0; l < d_; ++l) H[j * P + l] += xj * x[l];
      H[j * P + d_] += xj;
    }
  }

 private:
  /// The dot product's partial sums for long and short rows (forward()).
  template <class Scalar>
  static constexpr int long_row_sums = 128 / sizeof(Scalar);
  template <class Scalar>
  static constexpr int short_row_sums = 32 / sizeof(Scalar);

  /// Whether a row takes 256 bytes or more: the dot product's long form,
  /// and half blocks on the batched path (see there).
  template <class Scalar>
  KOKKOS_FUNCTION bool long_rows() const {
    return d_ * int(sizeof(Scalar)) >= 256;
  }

  /// z[s] = the logit of sample s and y[s] its target, for s < m; lanes
  /// m … B-1 keep the padding the caller set (the loss computes and
  /// ignores them). Calls ahead(offset + s) as it starts on sample s
  /// (`ahead` taken by value, so that its fields stay in registers: in
  /// cache, float d = 32, 5% faster than by reference). Long is
  /// long_rows(), given at compile time so that the short rows' unrolled
  /// loops are compiled apart from the long rows' (in one function, GCC
  /// spilled in the long rows' loop: linear, float, d = 64, 7-15% slower).
  template <bool Long, class Scalar, class Ahead>
  KOKKOS_FUNCTION void logits(const Scalar* theta, const Scalar* const* xs, const Scalar* ys,
                              int m, Scalar* z, Scalar* y, const Ahead ahead,
                              int offset) const {
    int s = 0;
#ifdef GRADSUM_ROW_DOT_REGISTER_BYTES
    if constexpr (!Long)
      s = with_short_row_groups<Scalar>([&](auto groups) {
        return logit_pairs<decltype(groups)::value>(theta, xs, m, z, ahead, offset);
      });
#endif
    for (; s < m; ++s) {
      ahead(offset + s);
      forward(theta, xs[s], z + s);
    }
    for (s = 0; s < m; ++s) y[s] = ys[s];
  }

#ifdef GRADSUM_ROW_DOT_REGISTER_BYTES
  /// forward()'s arithmetic, two short rows at a time, for rows of Groups
  /// whole groups of partial sums (and a shorter rest): z[s] for s < m
  /// rounded down to even; returns that count.
  template <int Groups, class Scalar, class Ahead>
  KOKKOS_FORCEINLINE_FUNCTION int logit_pairs(const Scalar* theta, const Scalar* const* xs, int m,
                                              Scalar* z, const Ahead& ahead, int offset) const {
    const Scalar bias = theta[d_];
    int s = 0;
    for (; s + 2 <= m; s += 2) {
      ahead(offset + s);
      ahead(offset + s + 1);
      Scalar pair[2];
      detail::row_dot_pair<short_row_sums<Scalar>, Groups>(theta, xs[s], xs[s + 1], d_, pair);
      z[s] = bias + pair[0];
      z[s + 1] = bias + pair[1];
    }
    return s;
  }

  /// f(std::integral_constant<int, G>{}) for G = d / K, the whole groups
  /// of K partial sums in a short row (G < 8): the row's loop then has a
  /// length known at compile time, which the compiler unrolls (bench_gradient,
  /// logistic, float, d = 32: one core in cache 30-32 -> 34-36 GB/s; two
  /// threads streaming, 54-55 -> 56-61 GB/s in the fastest memory state,
  /// unchanged in the slower ones).
  template <class Scalar, class F>
  KOKKOS_FORCEINLINE_FUNCTION decltype(auto) with_short_row_groups(F&& f) const {
    using std::integral_constant;
    switch (d_ / short_row_sums<Scalar>) {
      case 0: return f(integral_constant<int, 0>{});
      case 1: return f(integral_constant<int, 1>{});
      case 2: return f(integral_constant<int, 2>{});
      case 3: return f(integral_constant<int, 3>{});
      case 4: return f(integral_constant<int, 4>{});
      case 5: return f(integral_constant<int, 5>{});
      case 6: return f(integral_constant<int, 6>{});
      default: return f(integral_constant<int, 7>{});
    }
  }
#endif

  /// block_gradient for m <= B samples in one go; its samples are
  /// offset … offset + m - 1 of the block, for ahead().
  template <int B, bool Long, class Loss, class Scalar, class Ahead>
  KOKKOS_FUNCTION Scalar sub_block_gradient(const Loss& loss, const Scalar* theta,
                                            const Scalar* const* xs, const Scalar* ys, int m,
                                            Scalar* g, const Ahead& ahead, int offset) const {
    Scalar z[B] = {}, y[B] = {}, dz[B];
    logits<Long>(theta, xs, ys, m, z, y, ahead, offset);
    const Scalar total = detail::block_value_and_derivative<B>(loss, z, y, m, dz);
    // g += dz_s (x_s, 1), eight samples per pass over g (then four, then
    // one): an eighth of the loads and stores of g that one backward() per
    // sample would make (eight rather than four: d = 32, float, one thread,
    // 110 -> 120 M samples/s with -march=native; no change at the baseline).
    int s = 0;
    for (; s + 8 <= m; s += 8) {
      const Scalar *x0 = xs[s], *x1 = xs[s + 1], *x2 = xs[s + 2], *x3 = xs[s + 3];
      const Scalar *x4 = xs[s + 4], *x5 = xs[s + 5], *x6 = xs[s + 6], *x7 = xs[s + 7];
      const Scalar r0 = dz[s], r1 = dz[s + 1], r2 = dz[s + 2], r3 = dz[s + 3];
      const Scalar r4 = dz[s + 4], r5 = dz[s + 5], r6 = dz[s + 6], r7 = dz[s + 7];
      for (int j = 0; j < d_; ++j)
        g[j] += ((r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j])) +
                ((r4 * x4[j] + r5 * x5[j]) + (r6 * x6[j] + r7 * x7[j]));
      g[d_] += ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
    }
    for (; s + 4 <= m; s += 4) {
      const Scalar *x0 = xs[s], *x1 = xs[s + 1], *x2 = xs[s + 2], *x3 = xs[s + 3];
      const Scalar r0 = dz[s], r1 = dz[s + 1], r2 = dz[s + 2], r3 = dz[s + 3];
      for (int j = 0; j < d_; ++j) g[j] += (r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j]);
      g[d_] += (r0 + r1) + (r2 + r3);
    }
    for (; s < m; ++s) backward(theta, xs[s], dz + s, g);
    return total;
  }

  int d_;
};

}  // namespace gradsum
