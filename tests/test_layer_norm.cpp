// SPDX-License-Identifier: Apache-2.0
// LayerNorm alone: its backward against central differences (widths 1, odd
// and past 64; one row, odd rows, rows over several chunks), its output
// against the formula with the biased variance written out by hand, a row
// of equal values (the bias exactly, whatever eps), eps's weight on a
// nearly constant row, float forward and backward, and the errors for bad
// widths and eps.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/layer_norm.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace gradsum_test;

namespace {

// The layer's forward on one panel of host rows, with host parameters;
// then, given dout, its backward: g (from 0) and din.
template <class Space, class Scalar>
struct LayerNormRun {
  using Memory = typename Space::memory_space;
  using Vector = Kokkos::View<Scalar*, Memory>;
  gradsum::LayerNorm layer;
  gradsum::Tokens t;
  Vector theta, in, out, work;
  std::size_t rows, n;

  LayerNormRun(const gradsum::LayerNorm& l, gradsum::Tokens tokens, const std::vector<double>& th,
               const std::vector<double>& x)
      : layer(l),
        t(tokens),
        theta("theta", th.size()),
        in("in", x.size()),
        out("out", x.size()),
        work("work", l.workspace_size(tokens)),
        rows(std::size_t(tokens.rows())),
        n(std::size_t(l.width)) {
    gradsum_test::detail::from_host(theta, th);
    gradsum_test::detail::from_host(in, x);
  }
  gradsum::LayerInput<Scalar, Memory> input(const Vector& v) const {
    return gradsum::LayerInput<Scalar, Memory>(v.data(), rows, n);
  }
  std::vector<double> forward() const {
    layer.forward(Space(), theta.data(), t, input(in),
                  gradsum::LayerOutput<Scalar, Memory>(out.data(), rows, n), work.data());
    Space().fence();
    return host(out);
  }
  // g then din, after forward().
  std::pair<std::vector<double>, std::vector<double>> backward(
      const std::vector<double>& dout_values) const {
    Vector dout("dout", dout_values.size()), g("g", 2 * n), din("din", dout_values.size());
    gradsum_test::detail::from_host(dout, dout_values);
    layer.backward(Space(), theta.data(), t, input(in), input(out), input(dout), g.data(),
                   gradsum::LayerOutput<Scalar, Memory>(din.data(), rows, n), work.data());
    Space().fence();
    return {host(g), host(din)};
  }
  static std::vector<double> host(const Vector& v) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    return std::vector<double>(h.data(), h.data() + h.extent(0));
  }
};

template <class Space, class Scalar>
std::vector<double> layer_norm_rows(const gradsum::LayerNorm& layer, gradsum::Tokens t,
                                    const std::vector<double>& theta,
                                    const std::vector<double>& x) {
  return LayerNormRun<Space, Scalar>(layer, t, theta, x).forward();
}

// Values as float holds them.
std::vector<double> as_float(std::vector<double> v) {
  for (auto& x : v) x = double(float(x));
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: backward against central differences", Space,
                          layer_norm_differences) {
  for (int width : {1, 3, 67})
    for (gradsum::Tokens t :
         {gradsum::Tokens{1, 1}, gradsum::Tokens{5, 1}, gradsum::Tokens{3, 3}}) {
      const auto e = check_layer<Space>(gradsum::LayerNorm{width}, t, 11 + std::uint64_t(width));
      CHECK(e.parameters < 1e-7);
      CHECK(e.inputs < 1e-7);
      CHECK(e.accumulate < 1e-14);
    }
  // 70 rows: three chunks of the parameter sums, the last one short.
  const auto chunks = check_layer<Space>(gradsum::LayerNorm{5}, gradsum::Tokens{7, 10}, 9);
  CHECK(chunks.parameters < 1e-7);
  CHECK(chunks.inputs < 1e-7);
  CHECK(chunks.accumulate < 1e-14);
  // A larger eps, so that the variance and eps weigh alike.
  const auto e = check_layer<Space>(gradsum::LayerNorm{4, 0.3}, gradsum::Tokens{2, 3}, 5);
  CHECK(e.parameters < 1e-7);
  CHECK(e.inputs < 1e-7);
}

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: the biased variance, as PyTorch's", Space,
                          layer_norm_biased_variance) {
  // x = (1, 2, 3, 4): mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  const std::vector<double> theta = {2, -1, 0.5, 3, 0.25, 0, -2, 1};
  const auto y = layer_norm_rows<Space, double>(gradsum::LayerNorm{4}, gradsum::Tokens{1, 1}, theta,
                                                {1, 2, 3, 4});
  const long double inv_std = 1.0L / std::sqrt(1.25L + 1e-5L);
  for (int j = 0; j < 4; ++j) {
    const long double want =
        (j + 1 - 2.5L) * inv_std * theta[std::size_t(j)] + theta[std::size_t(4 + j)];
    CHECK(y[std::size_t(j)] == doctest::Approx(double(want)).epsilon(1e-15));
  }
}

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: a row of equal values gives the bias exactly", Space,
                          layer_norm_constant_row) {
  // Its variance is 0: only eps keeps 1/sqrt(var + eps) finite, and the
  // centred values are exactly 0 (0.1 three times does not sum to 0.3).
  for (double eps : {1e-5, 1e-12, 0.5})
    for (double value : {0.1, -3.7, 1e6}) {
      const gradsum::LayerNorm layer{3, eps};
      const std::vector<double> theta = {1.5, -2, 0.7, 0.3, -0.1, 4};
      const auto y = layer_norm_rows<Space, double>(layer, gradsum::Tokens{2, 1}, theta,
                                                    std::vector<double>(6, value));
      for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == theta[3 + i % 3]);
    }
}

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: eps outweighs a tiny variance", Space,
                          layer_norm_tiny_variance) {
  // x = (1 - d, 1 + d): variance d^2 = 1e-8. Without eps the output would
  // be (-1, 1); eps = 1e-5 scales it by d / sqrt(d^2 + eps).
  const double d = 1e-4;
  for (double eps : {1e-5, 1e-3}) {
    const auto y = layer_norm_rows<Space, double>(gradsum::LayerNorm{2, eps}, gradsum::Tokens{1, 1},
                                                  {1, 1, 0, 0}, {1 - d, 1 + d});
    const double want = d / std::sqrt(d * d + eps);
    CHECK(want < 0.04);
    CHECK(y[0] == doctest::Approx(-want).epsilon(1e-9));
    CHECK(y[1] == doctest::Approx(want).epsilon(1e-9));
  }
}

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: float rows", Space, layer_norm_float) {
  // The model's default precision: the same formula to float's rounding.
  const int n = 67;
  const auto x = random_vector(std::size_t(3 * n), 7);
  const auto theta = random_vector(std::size_t(2 * n), 8);
  const auto y = layer_norm_rows<Space, float>(gradsum::LayerNorm{n}, gradsum::Tokens{1, 3},
                                               as_float(theta), as_float(x));
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < n; ++j) mean += double(float(x[std::size_t(r * n + j)])) / n;
    for (int j = 0; j < n; ++j) {
      const double c = double(float(x[std::size_t(r * n + j)])) - mean;
      var += c * c / n;
    }
    for (int j = 0; j < n; ++j) {
      const double want = (double(float(x[std::size_t(r * n + j)])) - mean) /
                              std::sqrt(var + 1e-5) * double(float(theta[std::size_t(j)])) +
                          double(float(theta[std::size_t(n + j)]));
      CHECK(y[std::size_t(r * n + j)] == doctest::Approx(want).epsilon(1e-5));
    }
  }
}

TEST_CASE_TEMPLATE_DEFINE("LayerNorm: float backward", Space, layer_norm_float_backward) {
  // Float's gradients against double's (which the central differences
  // check) on the same float values: they differ by float's rounding.
  const int n = 67;
  const gradsum::Tokens t{2, 3};
  const auto x = as_float(random_vector(std::size_t(6 * n), 17));
  const auto theta = as_float(random_vector(std::size_t(2 * n), 18));
  const auto dout = as_float(random_vector(std::size_t(6 * n), 19));
  const LayerNormRun<Space, float> single(gradsum::LayerNorm{n}, t, theta, x);
  const LayerNormRun<Space, double> twice(gradsum::LayerNorm{n}, t, theta, x);
  single.forward();
  twice.forward();
  const auto [g_float, din_float] = single.backward(dout);
  const auto [g_double, din_double] = twice.backward(dout);
  CHECK(gradsum_test::detail::relative_error(g_float, g_double) < 1e-6);
  CHECK(gradsum_test::detail::relative_error(din_float, din_double) < 1e-6);
  CHECK(gradsum_test::detail::relative_error(g_float, g_double) > 0);  // float did run in float
}

TEST_CASE("LayerNorm: a bad width or eps is an error naming it") {
  auto message = [](const gradsum::LayerNorm& layer) { return validate_error(layer); };
  CHECK(message(gradsum::LayerNorm{0}) == "gradsum::LayerNorm: width must be at least 1, got 0");
  CHECK(message(gradsum::LayerNorm{4, 0.0}) ==
        "gradsum::LayerNorm: eps must be a finite number above 0, got 0");
  CHECK(message(gradsum::LayerNorm{4, -1e-5}).find("got -1e-05") != std::string::npos);
  CHECK(message(gradsum::LayerNorm{4, std::numeric_limits<double>::quiet_NaN()}) != "");
  CHECK(message(gradsum::LayerNorm{4}) == "");
  CHECK(gradsum::LayerNorm{8}.describe() == "layer_norm(8)");
  CHECK(gradsum::LayerNorm{8, 0.5}.describe() == "layer_norm(8,eps=0.5)");
}

TEST_CASE_TEMPLATE_APPLY(layer_norm_differences, Spaces);
TEST_CASE_TEMPLATE_APPLY(layer_norm_biased_variance, Spaces);
TEST_CASE_TEMPLATE_APPLY(layer_norm_constant_row, Spaces);
TEST_CASE_TEMPLATE_APPLY(layer_norm_tiny_variance, Spaces);
TEST_CASE_TEMPLATE_APPLY(layer_norm_float, Spaces);
TEST_CASE_TEMPLATE_APPLY(layer_norm_float_backward, Spaces);
