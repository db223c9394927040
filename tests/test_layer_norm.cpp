// SPDX-License-Identifier: Apache-2.0
// LayerNorm alone: its backward against central differences (widths 1, odd
// and past 64; one row, odd rows), its output against the formula with the
// biased variance written out by hand, a row of equal values (the bias
// exactly, whatever eps), eps's weight on a nearly constant row, float,
// and the errors for bad widths and eps.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/layer_norm.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace {

// The layer's forward on one panel of host rows, with host parameters.
template <class Space, class Scalar>
std::vector<Scalar> layer_norm_rows(const gradsum::LayerNorm& layer, gradsum::Tokens t,
                                    const std::vector<Scalar>& theta,
                                    const std::vector<Scalar>& x) {
  using Memory = typename Space::memory_space;
  Kokkos::View<Scalar*, Memory> th("theta", theta.size()), in("in", x.size()), out("out", x.size()),
      work("work", layer.workspace_size(t));
  gradsum_test::detail::from_host(th, std::vector<double>(theta.begin(), theta.end()));
  gradsum_test::detail::from_host(in, std::vector<double>(x.begin(), x.end()));
  const std::size_t rows = std::size_t(t.rows()), n = std::size_t(layer.width);
  layer.forward(Space(), th.data(), t, gradsum::LayerInput<Scalar, Memory>(in.data(), rows, n),
                gradsum::LayerOutput<Scalar, Memory>(out.data(), rows, n), work.data());
  Space().fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<Scalar>(h.data(), h.data() + h.extent(0));
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
                                               std::vector<float>(theta.begin(), theta.end()),
                                               std::vector<float>(x.begin(), x.end()));
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
