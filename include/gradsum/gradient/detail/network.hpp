// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The network path: the gradient of a Network (model/network.hpp) over
/// panels of the batch,
///
///     forward    h = body(input)            (the layers' own kernels)
///                z = h E^T (tied output) or z = h
///     loss       dz = dl/dz at every position; the loss sum into out(P)
///     backward   dE += dz^T h, dh = dz E   (tied output)
///                body.backward(dh)          (adds into the gradient)
///
/// written straight into the step's gradient buffer. A panel is up to
/// network_panel_windows() windows of `context` tokens (rows of a table are
/// windows of one); every buffer lies in the workspace the step allocated
/// (network_workspace_size): nothing is allocated here.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/detail/layerwise.hpp>
#include <gradsum/linalg/gemm.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/layer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gradsum {
namespace detail {

/// Where the buffers of a panel of `windows` windows lie in the network
/// path's workspace, in scalars from its start: the panel's loss, the
/// body's input, its output h, the logits z (h itself without a tied
/// output), their derivatives dz and dh (dz itself without a tied output),
/// and the body's own workspace.
struct NetworkLayout {
  std::int64_t windows = 0;
  int length = 1;
  std::size_t input = 0, body_out = 0, logits = 0, delta = 0, body_delta = 0, body_work = 0,
              total = 0;
  std::int64_t rows() const { return windows * length; }
};

/// Scalars before the first panel buffer (the panel's loss).
constexpr std::size_t network_fixed_scalars = 64;

/// (`length`: tokens per window, the context when 0.)
template <class Net>
NetworkLayout network_layout(const Net& net, std::int64_t windows, int length = 0) {
  NetworkLayout l;
  l.windows = windows;
  l.length = length > 0 ? length : net.windows() ? net.context() : 1;
  const auto rows = std::size_t(l.rows());
  const auto width = std::size_t(net.body_width());
  std::size_t at = network_fixed_scalars;
  l.input = at;
  at += rows * std::size_t(net.body().input_width());
  l.body_out = at;
  at += rows * width;
  l.logits = l.body_out;
  if (net.tied()) {
    l.logits = at;
    at += rows * std::size_t(net.num_outputs());
  }
  l.delta = at;
  at += rows * std::size_t(net.num_outputs());
  l.body_delta = l.delta;
  if (net.tied()) {
    l.body_delta = at;
    at += rows * width;
  }
  l.body_work = at;
  at += net.body().workspace_size(Tokens{windows, l.length});
  l.total = at;
  return l;
}

/// Windows per panel: as many as panel_tokens allows, fewer where their
/// buffers would pass panel_scalars, at least one.
template <class Net>
std::int64_t network_panel_windows(const Net& net) {
  const std::int64_t length = net.windows() ? net.context() : 1;
  std::int64_t windows = net.panel_tokens / length;
  if (windows < 1) windows = 1;
  const auto base = network_layout(net, 0).total;
  const auto per_window = network_layout(net, 1).total - base;
  const auto budget = std::size_t(net.panel_scalars);
  if (budget > base && per_window > 0 && std::size_t(windows) > (budget - base) / per_window)
    windows = std::int64_t((budget - base) / per_window);
  return windows < 1 ? 1 : windows;
}

/// The workspace a step allocates for the network path of `net`.
template <class Net>
std::size_t network_workspace_size(const Net& net) {
  return network_layout(net, network_panel_windows(net)).total;
}

/// in(q, 0) = x(rows(first + q / T), q % T): the input ids of m windows of
/// T tokens, a row per token. Asynchronous.
template <class Space, class X, class Rows, class In>
void gather_window_inputs(const Space& space, const X& x, const Rows& rows, std::int64_t first,
                          int length, const In& in) {
  Kokkos::parallel_for(
      "gradsum::gradient::network::gather_tokens",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                 std::int64_t(in.extent(0))),
      KOKKOS_LAMBDA(std::int64_t q) { in(q, 0) = x(rows(first + q / length), q % length); });
}

/// The target of token q of a panel of windows of `length` tokens, the
/// selected rows from `first` on: the next id of its window,
/// x(rows(first + q / length), q % length + 1).
template <class X, class Rows>
struct WindowTargets {
  X x;
  Rows rows;
  std::int64_t first;
  int length;
  KOKKOS_FUNCTION typename X::non_const_value_type operator()(std::int64_t q) const {
    return x(rows(first + q / length), q % length + 1);
  }
};

/// The panels of the network path in a workspace (network_layout of up to
/// `windows` windows each).
template <class Net, class Scalar, class Memory>
struct NetworkPanels {
  using Matrix = Panel<Scalar, Memory>;
  using CMatrix = Panel<const Scalar, Memory>;
  Net net;
  std::int64_t windows = 0;
  Scalar* work = nullptr;
  Kokkos::View<Scalar, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>> panel_loss;

  template <class Work>
  NetworkPanels(const Net& n, const Work& w, const char* who)
      : net(n), windows(network_panel_windows(n)), work(w.data()), panel_loss(w.data()) {
    const std::size_t need = network_layout(net, windows).total;
    if (w.extent(0) < need)
      fail(who, ": the network path needs a workspace of ", need, " values or more, got ",
           w.extent(0));
  }

  /// The body's input for the m windows (or rows) from selected row
  /// `first` on: rows of a table in place where they lie in order, else
  /// gathered. Asynchronous.
  template <class Space, class X, class Rows>
  CMatrix input(const Space& space, const NetworkLayout& l, const X& x, const Rows& rows,
                std::int64_t first) const {
    const int d = net.body().input_width();
    const Matrix in(work + l.input, l.rows(), d);
    if (net.windows()) {
      gather_window_inputs(space, x, rows, first, l.length, in);
      return in;
    }
    if (std::is_same<Rows, RowRange>::value && rows_contiguous(x) &&
        std::size_t(x.stride(0)) == std::size_t(d))
      return CMatrix(x.data() + rows(first) * d, l.rows(), d);
    gather_rows(space, x, rows, first, in, false);
    return in;
  }

  /// The body's output h and the logits z for the input `in`. Asynchronous.
  template <class Space>
  CMatrix forward(const Space& space, const NetworkLayout& l, const Scalar* theta,
                  const CMatrix& in) const {
    const std::int64_t R = l.rows();
    const int C = net.body_width();
    net.body().forward(space, theta, Tokens{l.windows, l.length}, in,
                       Matrix(work + l.body_out, R, C), work + l.body_work);
    if (net.tied())
      gemm(space, 'N', 'T', Scalar(1), CMatrix(work + l.body_out, R, C),
           CMatrix(theta, net.vocabulary(), C), Scalar(0),
           Matrix(work + l.logits, R, net.num_outputs()));
    return CMatrix(work + l.logits, R, net.num_outputs());
  }

  /// The derivatives dz (in delta) back through the output and the body,
  /// added into g. Asynchronous.
  template <class Space>
  void backward(const Space& space, const NetworkLayout& l, const Scalar* theta, Scalar* g,
                const CMatrix& in) const {
    const std::int64_t R = l.rows();
    const int C = net.body_width(), V = net.num_outputs();
    const CMatrix h(work + l.body_out, R, C);
    if (net.tied()) {
      const CMatrix dz(work + l.delta, R, V);
      gemm(space, 'T', 'N', Scalar(1), dz, h, Scalar(1), Matrix(g, V, C));
      gemm(space, 'N', 'N', Scalar(1), dz, CMatrix(theta, V, C), Scalar(0),
           Matrix(work + l.body_delta, R, C));
    }
    net.body().backward(space, theta, Tokens{l.windows, l.length}, in, h,
                        CMatrix(work + l.body_delta, R, C), g, Matrix(nullptr, 0, 0),
                        work + l.body_work);
  }
};

/// The network path's gradient of `net` over the selected rows: the summed
/// gradient into out(0 … P), the summed loss (over every position) into
/// out(P), in panels sized by `work` (network_workspace_size scalars or
/// more). Without `backward`, the loss alone (the forward passes; the
/// gradient's entries stay 0). The last panel's backward reports the
/// gradient's final entries as they come (model/detail/backward_progress.hpp).
/// Asynchronous.
template <class Space, class Net, class Loss, class Theta, class Data, class Rows, class Out,
          class Work>
void network_sum(const Space& space, const Net& net, const Loss& loss, const Theta& theta,
                 const Data& data, const Rows& rows, const Out& out, const Work& work,
                 bool backward = true) {
  using Scalar = typename Data::scalar_type;
  using Memory = typename Space::memory_space;
  using X = typename Data::features_view;
  const NetworkPanels<Net, Scalar, Memory> panels(net, work, "gradsum::Analytic");
  const int P = net.num_parameters();
  Kokkos::deep_copy(space, Kokkos::subview(out, Kokkos::make_pair(0, P + 1)), Scalar(0));
  const auto total = Kokkos::subview(out, Kokkos::make_pair(P, P + 1));
  const int length = net.windows() ? net.context() : 0;
  for (std::int64_t first = 0; first < rows.size(); first += panels.windows) {
    const std::int64_t m =
        rows.size() - first < panels.windows ? rows.size() - first : panels.windows;
    const NetworkLayout l = network_layout(net, m);
    const auto in = panels.input(space, l, data.features(), rows, first);
    const auto z = panels.forward(space, l, theta.data(), in);
    const Panel<Scalar, Memory> delta(panels.work + l.delta, l.rows(), net.num_outputs());
    const char* label = "gradsum::gradient::network::loss";
    if (net.windows())
      loss_rows(space, label, loss, z, WindowTargets<X, Rows>{data.features(), rows, first, length},
                delta, panels.panel_loss);
    else
      loss_rows(space, label, loss, z,
                RowTargets<typename Data::targets_view, Rows>{data.targets(), rows, first}, delta,
                panels.panel_loss);
    add_scalar(space, total, panels.panel_loss);
    if (!backward) continue;
    if (first + m < rows.size()) {  // a later panel still adds: nothing is final yet
      const ScopedBackwardListener quiet(nullptr);
      panels.backward(space, l, theta.data(), out.data(), in);
    } else {
      panels.backward(space, l, theta.data(), out.data(), in);
      report_final(out.data());
    }
  }
}

/// reduce_outputs (train/detail/model_outputs.hpp) for a Network over rows
/// of a table: panels of rows through the body (and a workspace for one
/// panel, allocated here), then f(r, z, sum) for each row r. A network
/// over windows of text has outputs at every position, not per row: a
/// gradsum::Error naming `who` (gradsum::generate samples from one).
/// Blocking.
template <class Value, class Space, class Net, class Theta, class X, class F>
Value network_reduce_outputs(const Space& space, const Net& net, const Theta& theta, const X& x,
                             const F& f, const char* who, const char* label) {
  using Scalar = typename Theta::non_const_value_type;
  using Memory = typename Space::memory_space;
  if (net.windows())
    fail(who, ": the network is over windows of text, with outputs at every position rather "
         "than per row; gradsum::generate samples text from it");
  Kokkos::View<Scalar*, Memory> work(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::predict::network_panels"),
      network_workspace_size(net));
  const NetworkPanels<Net, Scalar, Memory> panels(net, work, who);
  const RowRange rows{0, std::int64_t(x.extent(0))};
  Value total{};
  for (std::int64_t first = 0; first < rows.size(); first += panels.windows) {
    const std::int64_t m = std::min(rows.size() - first, panels.windows);
    const NetworkLayout l = network_layout(net, m);
    const auto z = panels.forward(space, l, theta.data(), panels.input(space, l, x, rows, first));
    total += reduce_panel<Value>(space, first, m, z, f, label);
  }
  return total;
}

}  // namespace detail
}  // namespace gradsum
