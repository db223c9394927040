// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Multi-head scaled dot-product self-attention, without parameters (the
/// projections around it are dense layers). Per window and head h, with
/// d = C/H and the rows of Q, K, V the token rows' slices of that head:
///
///     S = Q K^T / sqrt(d),   P = softmax(S) row by row (key j > query i
///     masked out when causal),   O = P V
///
/// and backward (the FlashAttention identity: sum_j P_ij dP_ij = dO_i . O_i)
///
///     dP = dO V^T,   delta_i = dO_i . O_i,   dS = P . (dP - delta) / sqrt(d)
///     dQ = dS K,     dK = dS^T Q,            dV = P^T dO
///
/// each in fused kernels of its own: forward and dQ parallel over (window,
/// head, block of query rows), dK and dV over (window, head, block of key
/// rows) with the query rows summed in order, so that no atomics are
/// needed and the sums have the same bits whatever the thread count. The
/// keys and values of each (window, head) are first transposed (K^T, V^T),
/// so that a query's scores S_i = Q_i K^T and dP_i = dO_i V^T are sums of
/// rows of length T that vectorize, like every other loop here (over T or
/// over d); dS is kept between the two backward kernels. A block is a few
/// rows whose sums are built together in registers
/// (layers/detail/attention_blocks.hpp), each still adding its terms in
/// order.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/multiply_add.hpp>
#include <gradsum/loss/detail/vector_math.hpp>
#include <gradsum/model/detail/row_dot.hpp>
#include <gradsum/model/layers/detail/attention_blocks.hpp>
#include <gradsum/model/layer.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {
namespace detail {

/// Where a kernel index (window, head, block of rows) reads and writes:
/// the (window, head) pair, the window's first row, the block's first
/// position in the window and its count of rows, the head's width d and
/// first column of Q, K and V.
struct AttentionBlock {
  std::int64_t pair, first;
  int position, rows, d;
  std::int64_t q, k, v;
};

/// The shape of one panel of attention, captured by the kernels.
struct AttentionShape {
  std::int64_t sequences = 0;
  int length = 1, width = 0, heads = 1;
  bool causal = true;

  KOKKOS_FUNCTION int head_width() const { return width / heads; }
  /// Keys query i sees: [0, i] when causal, every key of its window otherwise.
  KOKKOS_FUNCTION int keys_for(int i) const { return causal ? i + 1 : length; }
  /// Queries that see key j: [j, length) when causal, all otherwise.
  KOKKOS_FUNCTION int first_query_for(int j) const { return causal ? j : 0; }
  /// (window, head, row) triples: the rows of P, dS and delta.
  KOKKOS_FUNCTION std::int64_t items() const { return sequences * heads * length; }
  /// (window, head, block of R rows) triples: the blocked kernels' index space.
  KOKKOS_FUNCTION std::int64_t blocks(int R) const {
    return sequences * heads * ((length + R - 1) / R);
  }
  /// The block ((window H + head) ceil(T / R) + b) decoded.
  KOKKOS_FUNCTION AttentionBlock block(std::int64_t index, int R) const {
    const int per_window = (length + R - 1) / R, d = head_width();
    const int position = int(index % per_window) * R;
    const std::int64_t pair = index / per_window, q = pair % heads * d;
    const int rows = length - position < R ? length - position : R;
    return {pair, pair / heads * length, position, rows, d, q, width + q,
            2 * std::int64_t(width) + q};
  }
  std::size_t probabilities() const { return std::size_t(items()) * std::size_t(length); }
};

/// The probabilities P of the panel: window s, head h, query i, key j at
/// ((s H + h) T + i) T + j of the workspace (0 where masked).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar* attention_row(Scalar* p, const AttentionShape& a,
                                             std::int64_t item) {
  return p + item * a.length;
}

/// x . y over a head's n columns: detail::row_dot's fixed order of eight
/// partial sums (one chain of additions would be the bottleneck).
template <class Scalar>
KOKKOS_FORCEINLINE_FUNCTION Scalar attention_dot(int n, const Scalar* x, const Scalar* y) {
  return row_dot<8, true>(x, y, n);
}

/// p[0 .. keys) = softmax(p[0 .. keys)) with the maximum subtracted, and
/// p[keys .. length) = 0: a row of P. The exponentials vectorize.
template <class Scalar>
KOKKOS_FORCEINLINE_FUNCTION void attention_softmax(Scalar* p, int keys, int length) {
  Scalar top = p[0];
  for (int j = 1; j < keys; ++j) top = p[j] > top ? p[j] : top;
  for (int j = 0; j < keys; ++j) p[j] = vector_math::exp<true>(p[j] - top);
  Scalar sum = 0;
  for (int j = 0; j < keys; ++j) sum += p[j];
  for (int j = 0; j < keys; ++j) p[j] /= sum;
  for (int j = keys; j < length; ++j) p[j] = 0;
}

/// Where the keys and values of a (window, head) lie transposed, d x T
/// each, after the probabilities, dS and delta in the workspace:
/// attention_layout(a).keys + pair d T, and .values likewise.
struct AttentionLayout {
  std::size_t scores, delta, keys, values, total;
};
inline AttentionLayout attention_layout(const AttentionShape& a) {
  AttentionLayout l;
  l.scores = a.probabilities();
  l.delta = 2 * a.probabilities();
  l.keys = l.delta + std::size_t(a.items());
  l.values = l.keys + std::size_t(a.items()) * std::size_t(a.head_width());
  l.total = l.values + std::size_t(a.items()) * std::size_t(a.head_width());
  return l;
}

/// The keys and values of every (window, head) transposed into the
/// workspace (K^T and V^T, d x T each), so that a query's scores and
/// dO V^T are sums of rows that vectorize over the keys. One kernel index
/// per (window, head, column c): it writes row c of K^T and of V^T whole,
/// the pair's keys and values staying in its core's cache for the next
/// column, where an index per token row wrote d values T apart. Asynchronous.
template <class Space, class In, class Scalar>
void attention_transpose(const Space& space, const AttentionShape& a, const In& in, Scalar* work) {
  const AttentionLayout l = attention_layout(a);
  const int d = a.head_width();
  Kokkos::parallel_for(
      "gradsum::layer::attention::transpose",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                   a.sequences * a.heads * d),
      KOKKOS_LAMBDA(std::int64_t index) {
        const std::int64_t pair = index / d;  // window H + head
        const std::int64_t first = pair / a.heads * a.length;
        const std::int64_t k = a.width + pair % a.heads * d + index % d, v = k + a.width;
        Scalar* kt = work + l.keys + index * a.length;  // row c of the pair's d x T block
        Scalar* vt = work + l.values + index * a.length;
        for (int t = 0; t < a.length; ++t) {
          kt[t] = in(first + t, k);
          vt[t] = in(first + t, v);
        }
      });
}

/// f(block, where) for every (window, head, block of B::rows rows) of the
/// panel, an index each. Asynchronous.
template <class B, class Space, class F>
void attention_for_blocks(const Space& space, const char* label, const AttentionShape& a,
                          const F& f) {
  Kokkos::parallel_for(
      label,
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, a.blocks(B::rows)),
      KOKKOS_LAMBDA(std::int64_t index) { f(a.block(index, B::rows)); });
}

/// The block's row r, a valid row for every r < R: rows past the block's
/// last repeat it (their sums are computed and dropped).
KOKKOS_INLINE_FUNCTION int attention_block_row(const AttentionBlock& b, int r) {
  return b.position + (r < b.rows ? r : b.rows - 1);
}

/// Forward of every (window, head, block of query rows): scores from K^T,
/// the masked softmax (kept in P), and O = P V. Asynchronous; the
/// workspace holds P, dS, delta, K^T and V^T (attention_layout).
template <class Space, class In, class Out, class Scalar>
void attention_forward(const Space& space, const AttentionShape& a, Scalar scale, const In& in,
                       const Out& out, Scalar* work) {
  attention_transpose(space, a, in, work);
  const AttentionLayout l = attention_layout(a);
  using B = AttentionBlocking<Space>;
  constexpr int R = B::rows;
  const auto columns = std::int64_t(in.extent(1));
  attention_for_blocks<B>(
      space, "gradsum::layer::attention::forward", a, KOKKOS_LAMBDA(const AttentionBlock& b) {
        const std::int64_t pair_row = b.pair * a.length;
        Scalar* p[R];
        const Scalar *pc[R], *q[R];
        Scalar* o[R];
        for (int r = 0; r < R; ++r) {
          const int i = attention_block_row(b, r);
          pc[r] = p[r] = attention_row(work, a, pair_row + i);
          q[r] = &in(b.first + i, b.q);
          o[r] = &out(b.first + i, b.q);
        }
        const int keys = a.keys_for(b.position + b.rows - 1);
        const Scalar* kt = work + l.keys + pair_row * b.d;
        attention_rows<R, B::keys>(q, 1, b.d, kt, a.length, scale, p, keys, a.length, b.rows);
        for (int r = 0; r < b.rows; ++r)
          attention_softmax(p[r], a.keys_for(b.position + r), a.length);
        attention_rows<R, B::columns>(pc, 1, keys, &in(b.first, b.v), columns, Scalar(1), o,
                                      b.d, b.d, b.rows);
      });
}

/// delta_i = dO_i . O_i, the row dS_i (kept) and dQ_i = sum_j dS_ij K_j
/// for every (window, head, block of query rows). Asynchronous.
template <class Space, class In, class Din, class Scalar>
void attention_backward_queries(const Space& space, const AttentionShape& a, Scalar scale,
                                const In& in, const In& out, const In& dout, const Din& din,
                                Scalar* work) {
  const AttentionLayout l = attention_layout(a);
  using B = AttentionBlocking<Space>;
  constexpr int R = B::rows;
  const auto columns = std::int64_t(in.extent(1));
  attention_for_blocks<B>(
      space, "gradsum::layer::attention::backward_queries", a,
      KOKKOS_LAMBDA(const AttentionBlock& b) {
        const std::int64_t pair_row = b.pair * a.length;
        Scalar* ds[R];
        const Scalar *dsc[R], *grad[R];
        Scalar* dq[R];
        for (int r = 0; r < R; ++r) {
          const int i = attention_block_row(b, r);
          dsc[r] = ds[r] = attention_row(work + l.scores, a, pair_row + i);
          grad[r] = &dout(b.first + i, b.q);
          dq[r] = &din(b.first + i, b.q);
        }
        const int keys = a.keys_for(b.position + b.rows - 1);
        const Scalar* vt = work + l.values + pair_row * b.d;
        // dP_i = dO_i V^T for the block's rows, then dS_i in place.
        attention_rows<R, B::keys>(grad, 1, b.d, vt, a.length, Scalar(1), ds, keys, a.length,
                                   b.rows);
        for (int r = 0; r < b.rows; ++r) {
          const int i = b.position + r, mine = a.keys_for(i);
          const Scalar dot = attention_dot(b.d, grad[r], &out(b.first + i, b.q));
          work[l.delta + std::size_t(pair_row + i)] = dot;
          const Scalar* pi = attention_row(work, a, pair_row + i);
          for (int j = 0; j < mine; ++j) ds[r][j] = pi[j] * (ds[r][j] - dot) * scale;
          for (int j = mine; j < a.length; ++j) ds[r][j] = 0;
        }
        attention_rows<R, B::columns>(dsc, 1, keys, &in(b.first, b.k), columns, Scalar(1), dq,
                                      b.d, b.d, b.rows);
      });
}

/// dK_j = sum_i dS_ij Q_i and dV_j = sum_i P_ij dO_i for every (window,
/// head, block of key rows), the queries i in order (from the block's
/// first key when causal: dS and P are 0 above the diagonal, so the rows
/// of the block after its first add zeros first). Asynchronous; after
/// attention_backward_queries on the same space (it reads dS).
template <class Space, class In, class Din, class Scalar>
void attention_backward_keys(const Space& space, const AttentionShape& a, const In& in,
                             const In& dout, const Din& din, const Scalar* work) {
  const AttentionLayout l = attention_layout(a);
  using B = AttentionBlocking<Space>;
  constexpr int R = B::rows;
  const auto columns = std::int64_t(in.extent(1)), out_columns = std::int64_t(dout.extent(1));
  attention_for_blocks<B>(
      space, "gradsum::layer::attention::backward_keys_values", a,
      KOKKOS_LAMBDA(const AttentionBlock& b) {
        const int from = a.first_query_for(b.position);
        // Row `from` of P and dS, at column j of the block's row r.
        const std::int64_t at = (b.pair * a.length + from) * a.length;
        const Scalar *ds[R], *p[R];
        Scalar *dk[R], *dv[R];
        for (int r = 0; r < R; ++r) {
          const int j = attention_block_row(b, r);
          ds[r] = work + l.scores + at + j;
          p[r] = work + at + j;
          dk[r] = &din(b.first + j, b.k);
          dv[r] = &din(b.first + j, b.v);
        }
        const int n = a.length - from;
        attention_rows<R, B::columns>(ds, a.length, n, &in(b.first + from, b.q), columns,
                                      Scalar(1), dk, b.d, b.d, b.rows);
        attention_rows<R, B::columns>(p, a.length, n, &dout(b.first + from, b.q), out_columns,
                                      Scalar(1), dv, b.d, b.d, b.rows);
      });
}

}  // namespace detail

/// Multi-head self-attention over the windows of a panel: input rows x 3C
/// holding queries, keys and values (columns [0, C), [C, 2C), [2C, 3C);
/// head h the slice [h C/H, (h+1) C/H) of each), output rows x C (the
/// heads concatenated). No parameters. Scores are scaled by 1/sqrt(C/H);
/// with `causal`, a query sees the keys of its own window at positions up
/// to its own, otherwise its whole window. The softmax subtracts each
/// row's maximum. The workspace keeps the probabilities P and dS,
/// sequences x H x T x T scalars each (they grow with the square of the
/// window length), the keys and values transposed (sequences x T x 2C)
/// and sequences x H x T more for backward: sequences x T x (2 H T + 2C +
/// H) scalars in all.
class SelfAttention {
 public:
  /// C = `width`, H = `heads`; throws gradsum::Error unless both are
  /// positive and H divides C.
  SelfAttention(int width, int heads, bool causal = true)
      : width_(width), heads_(heads), causal_(causal) {
    if (width < 1 || heads < 1)
      fail("gradsum::SelfAttention: width and heads must be >= 1, got width ", width,
           " and heads ", heads);
    if (width % heads != 0)
      fail("gradsum::SelfAttention: width ", width, " is not divisible by heads ", heads,
           "; expected a multiple of ", heads);
  }

  int width() const { return width_; }
  int heads() const { return heads_; }
  bool causal() const { return causal_; }

  int num_parameters() const { return 0; }
  int input_width() const { return 3 * width_; }
  int output_width() const { return width_; }
  /// sequences x T x (2 H T + 2 C + H) scalars (the class comment).
  std::size_t workspace_size(Tokens t) const {
    if (t.sequences < 1 || t.length < 1) return 0;
    return detail::attention_layout(shape(t)).total;
  }
  /// "self_attention(C,H,causal)" or "self_attention(C,H,full)".
  std::string describe() const {
    return concat("self_attention(", width_, ",", heads_, causal_ ? ",causal)" : ",full)");
  }

  /// Writes out = the heads' attention outputs and keeps P in `work`.
  /// Asynchronous; throws gradsum::Error on shapes that do not match.
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* /*theta*/, Tokens t,
               LayerInput<Scalar, Memory> in, LayerOutput<Scalar, Memory> out,
               Scalar* work) const {
    check(t, in.extent(0), in.extent(1), out.extent(0), out.extent(1), "forward");
    if (t.rows() == 0) return;
    detail::attention_forward(space, shape(t), scale<Scalar>(), in, out, work);
  }

  /// Writes din = dL/d(Q, K, V) from dout (nothing to add into g: no
  /// parameters; nothing at all when din.data() is null). Asynchronous.
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* /*theta*/, Tokens t,
                LayerInput<Scalar, Memory> in, LayerInput<Scalar, Memory> out,
                LayerInput<Scalar, Memory> dout, Scalar* /*g*/, LayerOutput<Scalar, Memory> din,
                Scalar* work) const {
    if (din.data() == nullptr || t.rows() == 0) return;
    check(t, in.extent(0), in.extent(1), dout.extent(0), dout.extent(1), "backward");
    check(t, din.extent(0), din.extent(1), out.extent(0), out.extent(1), "backward");
    const auto a = shape(t);
    detail::attention_backward_queries(space, a, scale<Scalar>(), in, out, dout, din, work);
    detail::attention_backward_keys(space, a, in, dout, din, static_cast<const Scalar*>(work));
  }

 private:
  detail::AttentionShape shape(Tokens t) const {
    return {t.sequences, t.length, width_, heads_, causal_};
  }
  template <class Scalar>
  Scalar scale() const {
    return Scalar(1 / std::sqrt(double(width_ / heads_)));
  }
  // A panel whose extents disagree with t and the widths is the caller's bug.
  void check(Tokens t, std::size_t in_rows, std::size_t in_cols, std::size_t out_rows,
             std::size_t out_cols, const char* where) const {
    if (t.sequences < 0 || t.length < 1)
      fail("gradsum::SelfAttention::", where, ": tokens must be >= 0 windows of length >= 1, got ",
           t.sequences, " x ", t.length);
    const auto rows = std::size_t(t.rows());
    if (in_rows != rows || in_cols != std::size_t(input_width()) || out_rows != rows ||
        out_cols != std::size_t(output_width()))
      fail("gradsum::SelfAttention::", where, ": got input ", in_rows, " x ", in_cols,
           " and output ", out_rows, " x ", out_cols, "; expected ", rows, " x ", input_width(),
           " and ", rows, " x ", output_width(), " (", t.sequences, " windows of ", t.length,
           " tokens, width ", width_, ")");
  }

  int width_ = 0, heads_ = 1;
  bool causal_ = true;
};

}  // namespace gradsum
