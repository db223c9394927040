// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// check_model()'s machinery for a model with a per-sample forward and
/// backward: the kernels and the checks on fixed rows
/// (diagnostics/check_model.hpp documents them).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/diagnostics/gradient_report.hpp>
#include <gradsum/loss/detail/value_and_derivative.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace gradsum {
namespace detail {

/// Where an R x k host array first holds a value that is not finite.
struct NonFinite2D {
  bool found = false;
  std::size_t row = 0, entry = 0;
  const char* what = "";  ///< "NaN" or "an infinity"
};
template <class HostView>
NonFinite2D first_nonfinite(const HostView& v) {
  for (std::size_t r = 0; r < v.extent(0); ++r)
    for (std::size_t c = 0; c < v.extent(1); ++c)
      if (!std::isfinite(double(v(r, c))))
        return {true, r, c, std::isnan(double(v(r, c))) ? "NaN" : "an infinity"};
  return {};
}

/// check_model's kernels, one sample per index: forward with the loss
/// (outputs, dl/dz and loss of sample r), backward of sample r into row r of
/// `g`, and the loss of sample r at perturbed parameter vector q (index
/// q R + r). Functors rather than lambdas, so that CUDA takes them however
/// they are called.
template <class Model, class Loss, class Scalar, class X, class Y, class Memory>
struct CheckModelKernels {
  using Matrix = Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory>;
  struct Forward {};
  struct Backward {};
  struct Perturbed {};
  static constexpr int capacity = output_capacity<Model>::value;

  Model model;
  Loss loss;
  X x;
  Y y;
  Kokkos::View<std::int64_t*, Memory> index;  ///< the rows checked
  Kokkos::View<Scalar*, Memory> theta;
  Matrix z, dz, value;                         ///< R x k, R x k, R x 1
  Matrix g;                                    ///< R x P, backward's target
  Matrix perturbed, perturbed_loss;            ///< 2 chunk x P, 2 chunk x R
  int k = 1, R = 1;

  KOKKOS_FUNCTION void operator()(Forward, const int r) const {
    Scalar zr[capacity] = {}, dr[capacity] = {};
    const std::int64_t i = index(r);
    FeatureRoom<X> room;
    model.forward(theta.data(), room.row(x, i), zr);
    value(r, 0) = value_and_derivative(loss, zr, k, y(i), dr);
    for (int c = 0; c < k; ++c) {
      z(r, c) = zr[c];
      dz(r, c) = dr[c];
    }
  }
  KOKKOS_FUNCTION void operator()(Backward, const int r) const {
    FeatureRoom<X> room;
    model.backward(theta.data(), room.row(x, index(r)), &dz(r, 0), &g(r, 0));
  }
  KOKKOS_FUNCTION void operator()(Perturbed, const int e) const {
    const int q = e / R, r = e % R;
    Scalar zr[capacity] = {}, dr[capacity] = {};
    const std::int64_t i = index(r);
    FeatureRoom<X> room;
    model.forward(&perturbed(q, 0), room.row(x, i), zr);
    perturbed_loss(q, r) = value_and_derivative(loss, zr, k, y(i), dr);
  }
};

/// check_model on fixed rows of (x, y), which the space can read: the
/// buffers are allocated once, then run() checks every parameter point.
template <class Scalar, class ExecutionSpace, class Model, class Loss, class X, class Y,
          class Options>
class ModelCheck {
  using Memory = typename ExecutionSpace::memory_space;
  using Tolerance = GradientTolerance<Scalar>;
  using Kernels = CheckModelKernels<Model, Loss, Scalar, X, Y, Memory>;
  using Matrix = typename Kernels::Matrix;
  using HostMatrix = decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                                   std::declval<Matrix>()));

 public:
  ModelCheck(const ExecutionSpace& space, const Model& model, const Loss& loss, const X& x,
             const Y& y, const std::vector<std::int64_t>& rows, const Options& options)
      : space_(space),
        options_(options),
        P_(model.num_parameters()),
        R_(int(rows.size())),
        // Perturbed copies of theta, a chunk of coordinates at a time (both
        // signs), so that one kernel evaluates them all; at most about 4M values.
        chunk_(int(std::max<std::int64_t>(
            1, std::min<std::int64_t>(32, (std::int64_t(1) << 21) / P_)))),
        judge_(options.tolerance > 0 ? options.tolerance : Tolerance::tolerance,
               Tolerance::floor),
        kernels_{model, loss, x, y, {}, {}, {}, {}, {}, {}, {}, {}, model.num_outputs(), R_},
        rng_(options.seed ^ 0x13198a2e03707344ULL) {
    const std::size_t R = std::size_t(R_), P = std::size_t(P_), k = std::size_t(kernels_.k);
    report_.samples = R_;
    report_.coordinates = spread_coordinates(
        P_, P_ <= options.max_full ? P_ : std::min(P_, options.sampled), options.seed);
    kernels_.index = Kokkos::View<std::int64_t*, Memory>("gradsum::check_model::rows", R);
    auto h = Kokkos::create_mirror_view(kernels_.index);
    for (int r = 0; r < R_; ++r) h(r) = rows[std::size_t(r)];
    Kokkos::deep_copy(kernels_.index, h);
    kernels_.theta = Kokkos::View<Scalar*, Memory>("gradsum::check_model::theta", P);
    kernels_.z = Matrix("gradsum::check_model::outputs", R, k);
    kernels_.dz = Matrix("gradsum::check_model::output_derivatives", R, k);
    kernels_.value = Matrix("gradsum::check_model::losses", R, 1);
    contribution_ = Matrix("gradsum::check_model::contributions", R, P);
    prefilled_ = Matrix("gradsum::check_model::prefilled", R, P);
    kernels_.perturbed =
        Matrix("gradsum::check_model::perturbed", std::size_t(2 * chunk_), P);
    kernels_.perturbed_loss =
        Matrix("gradsum::check_model::perturbed_losses", std::size_t(2 * chunk_), R);
    host_theta_ = Kokkos::create_mirror_view(kernels_.theta);
    host_perturbed_ = Kokkos::create_mirror_view(kernels_.perturbed);
    host_prefilled_ = Kokkos::create_mirror_view(prefilled_);
  }

  /// The report: every point checked, or the first failed check's sentence.
  GradientReport run() {
    for (int p = 0; p < options_.points; ++p) {
      const std::string at = options_.points > 1 ? concat(" (point ", p, ")") : std::string();
      for (int j = 0; j < P_; ++j)
        host_theta_(j) = Scalar(uniform_in(rng_, options_.theta_scale));
      Kokkos::deep_copy(kernels_.theta, host_theta_);
      const std::string drawn = concat(" with theta drawn from [-", options_.theta_scale, ", ",
                                       options_.theta_scale, "]", at);
      if (const std::string failure = forward_failure(drawn); !failure.empty())
        return not_finite(failure);
      const auto hc = backward_into(zeroed(contribution_));
      if (const auto bad = first_nonfinite(hc); bad.found)
        return not_finite(concat("backward's contribution has ", bad.what, " at sample ",
                                 bad.row, ", parameter ", bad.entry, drawn,
                                 " although forward and the loss are finite"));
      if (const std::string failure = accumulation_failure(hc, p, at); !failure.empty()) {
        report_.accumulates = false;
        return fail_with(failure);
      }
      const auto analytic = analytic_partials(hc);
      judge_.add_point(analytic, central_differences(), report_.coordinates, p);
    }
    judge_.finish(report_);
    return report_;
  }

 private:
  using Forward = Kokkos::RangePolicy<ExecutionSpace, typename Kernels::Forward>;
  using Backward = Kokkos::RangePolicy<ExecutionSpace, typename Kernels::Backward>;
  using Perturbed = Kokkos::RangePolicy<ExecutionSpace, typename Kernels::Perturbed>;

  /// The points checked so far, then the failed check's sentence.
  GradientReport fail_with(const std::string& sentence) {
    judge_.finish(report_);
    report_.passed = false;
    report_.diagnosis = sentence;
    return report_;
  }
  GradientReport not_finite(const std::string& sentence) {
    report_.finite = false;
    return fail_with(sentence);
  }

  /// Forward, the loss and its derivative, one sample per thread; what is
  /// not finite first ("" when all is).
  std::string forward_failure(const std::string& drawn) {
    Kokkos::parallel_for("gradsum::check_model::forward", Forward(space_, 0, R_), kernels_);
    auto hz = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kernels_.z);
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kernels_.value);
    auto hdz = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kernels_.dz);
    if (const auto bad = first_nonfinite(hz); bad.found)
      return concat("forward returned ", bad.what, " at sample ", bad.row, ", output ",
                    bad.entry, drawn);
    if (const auto bad = first_nonfinite(hv); bad.found)
      return concat("the loss is ", bad.what, " at sample ", bad.row, drawn,
                    " although forward's outputs are finite");
    if (const auto bad = first_nonfinite(hdz); bad.found)
      return concat("the loss derivative dz is ", bad.what, " at sample ", bad.row, ", output ",
                    bad.entry, drawn, " although forward's outputs are finite");
    return {};
  }

  static const Matrix& zeroed(const Matrix& g) {
    Kokkos::deep_copy(g, Scalar(0));
    return g;
  }

  /// Every sample's backward into row r of `g`, copied to the host (the
  /// same View when `g` is on the host).
  HostMatrix backward_into(const Matrix& g) {
    kernels_.g = g;
    Kokkos::parallel_for("gradsum::check_model::backward", Backward(space_, 0, R_), kernels_);
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g);
  }

  /// Backward twice into g prefilled with random values: both increments
  /// must equal the contribution `hc` computed from zero ("" when they do).
  std::string accumulation_failure(const HostMatrix& hc, int p, const std::string& at) {
    for (int r = 0; r < R_; ++r)
      for (int j = 0; j < P_; ++j)  // magnitudes in [0.5, 1.5], either sign: never 0
        host_prefilled_(r, j) =
            Scalar((rng_.next() & 1 ? 1.0 : -1.0) * (1.0 + 0.5 * uniform_in(rng_, 1.0)));
    Kokkos::deep_copy(prefilled_, host_prefilled_);
    // Copied before each backward: on the host, the mirrors are prefilled_ itself.
    const std::vector<double> h0 = values(host_prefilled_);
    const std::vector<double> g1 = values(backward_into(prefilled_));
    const auto h2 = backward_into(prefilled_);
    const double eps = std::numeric_limits<Scalar>::epsilon();
    for (int r = 0; r < R_; ++r)
      for (int j = 0; j < P_; ++j) {
        const std::size_t e = std::size_t(r) * P_ + j;
        const double c = double(hc(r, j)), g2 = double(h2(r, j));
        // Rounding of a few additions, with a wide margin: a backward that
        // assigns is off by |g| itself.
        const double room =
            1e3 * eps * (std::fabs(h0[e]) + std::fabs(g1[e]) + std::fabs(g2) + std::fabs(c));
        if (std::fabs((g1[e] - h0[e]) - c) <= room && std::fabs((g2 - g1[e]) - c) <= room)
          continue;
        if (std::fabs(g2 - g1[e]) <= room && std::fabs(g1[e] - c) <= room)
          return concat("backward assigns into g instead of adding (g after a second call "
                        "equals g after the first: g[", j, "] was ", short_number(h0[e]),
                        ", became ", short_number(g1[e]), ", then ", short_number(g2),
                        "; sample ", r, options_.points > 1 ? concat(", point ", p) : std::string(),
                        ")");
        return concat("backward does not add its contribution to g: for sample ", r, at,
                      ", g[", j, "] went ", short_number(h0[e]), " -> ", short_number(g1[e]),
                      " -> ", short_number(g2), ", but the contribution into zeros is ",
                      short_number(c));
      }
    return {};
  }

  /// An R x P host array as doubles, row by row.
  template <class HostView>
  std::vector<double> values(const HostView& v) const {
    std::vector<double> out(std::size_t(R_) * std::size_t(P_));
    for (int r = 0; r < R_; ++r)
      for (int j = 0; j < P_; ++j) out[std::size_t(r) * P_ + j] = double(v(r, j));
    return out;
  }

  /// The analytic partials of the checked coordinates, summed over the samples.
  std::vector<double> analytic_partials(const HostMatrix& hc) const {
    std::vector<double> analytic;
    for (int j : report_.coordinates) {
      double s = 0;
      for (int r = 0; r < R_; ++r) s += double(hc(r, j));
      analytic.push_back(s);
    }
    return analytic;
  }

  /// Central differences of the summed loss at the checked coordinates, in
  /// double on the host, a chunk of coordinates per kernel.
  std::vector<double> central_differences() {
    const double relative_step = options_.step > 0 ? options_.step : Tolerance::step;
    const int C = int(report_.coordinates.size());
    std::vector<double> numeric;
    // Every perturbed row starts as theta; only entry j of its pair moves,
    // and moves back after the chunk.
    for (int q = 0; q < 2 * chunk_; ++q)
      for (int l = 0; l < P_; ++l) host_perturbed_(q, l) = host_theta_(l);
    for (int first = 0; first < C; first += chunk_) {
      const int m = std::min(chunk_, C - first);
      std::vector<double> width(static_cast<std::size_t>(m));
      for (int q = 0; q < m; ++q) {
        const int j = report_.coordinates[std::size_t(first + q)];
        const Scalar t = host_theta_(j);
        const Scalar h = Scalar(relative_step * std::max(1.0, std::fabs(double(t))));
        host_perturbed_(2 * q, j) = t + h;
        host_perturbed_(2 * q + 1, j) = t - h;
        // The distance of the two points as stored (t +- h rounds).
        width[std::size_t(q)] =
            double(host_perturbed_(2 * q, j)) - double(host_perturbed_(2 * q + 1, j));
      }
      Kokkos::deep_copy(kernels_.perturbed, host_perturbed_);
      Kokkos::parallel_for("gradsum::check_model::perturbed_forward",
                           Perturbed(space_, 0, 2 * m * R_), kernels_);
      auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kernels_.perturbed_loss);
      for (int q = 0; q < m; ++q) {
        const int j = report_.coordinates[std::size_t(first + q)];
        host_perturbed_(2 * q, j) = host_perturbed_(2 * q + 1, j) = host_theta_(j);
        double up = 0, down = 0;
        for (int r = 0; r < R_; ++r) {
          up += double(hl(2 * q, r));
          down += double(hl(2 * q + 1, r));
        }
        numeric.push_back((up - down) / width[std::size_t(q)]);
      }
    }
    return numeric;
  }

  ExecutionSpace space_;
  Options options_;
  int P_, R_, chunk_;
  GradientReport report_;
  GradientJudge judge_;
  Kernels kernels_;
  SplitMix64 rng_;
  Matrix contribution_, prefilled_;
  decltype(Kokkos::create_mirror_view(std::declval<Kokkos::View<Scalar*, Memory>>())) host_theta_;
  decltype(Kokkos::create_mirror_view(std::declval<Matrix>())) host_perturbed_, host_prefilled_;
};
}  // namespace detail
}  // namespace gradsum
