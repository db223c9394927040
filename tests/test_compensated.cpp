// SPDX-License-Identifier: Apache-2.0
// The Compensated reduction: within its stated error bound, more accurate
// than Sum on an ill-conditioned sum whose exact value the test knows, and
// a drop-in reduction for the step.

#include "test_helpers.hpp"

#include <limits>

using namespace gradsum_test;

namespace {

// Contribution i of an ill-conditioned sum: blocks of `block` values
// +M, 1, 1, …, 1, -M (M a power of two, so +M and -M cancel exactly); the
// exact sum is the number of ones. Coordinate 1 holds the same values
// scaled by -0.5 (exact), so two coordinates are checked at once.
template <class Scalar>
struct IllConditioned {
  std::int64_t block;
  Scalar big;
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const std::int64_t r = i % block;
    const Scalar x = r == 0 ? big : r == block - 1 ? -big : Scalar(1);
    acc[0] += x;
    acc[1] += Scalar(-0.5) * x;
  }
};

template <class Space, class Scalar, class Reduction>
std::vector<double> reduce_with(std::int64_t n, const IllConditioned<Scalar>& body) {
  Kokkos::View<Scalar*, typename Space::memory_space> out("out", 2);
  Reduction{}.reduce(Space(), "test::ill_conditioned", n, 2, body, out);
  Space().fence();
  return to_host(out);
}

template <class Space, class Scalar>
void check_more_accurate(std::int64_t blocks, std::int64_t block, double big) {
  const std::int64_t n = blocks * block;
  const IllConditioned<Scalar> body{block, Scalar(big)};
  const double exact = double(blocks * (block - 2));
  const double u = std::numeric_limits<Scalar>::epsilon() / 2;
  // The header's bound: u |S| + gamma_(n-1)^2 sum |x_i|.
  const double gamma = double(n - 1) * u / (1 - double(n - 1) * u);
  const double sum_abs = double(blocks) * (2 * big + double(block - 2));
  const double bound = u * exact + gamma * gamma * sum_abs;
  const auto comp = reduce_with<Space, Scalar, gradsum::Compensated>(n, body);
  const auto plain = reduce_with<Space, Scalar, gradsum::Sum>(n, body);
  for (int j = 0; j < 2; ++j) {
    const double s = j == 0 ? exact : -0.5 * exact;
    const double comp_error = std::fabs(comp[j] - s), plain_error = std::fabs(plain[j] - s);
    MESSAGE(gradsum::space_name<Space>() << ", " << sizeof(Scalar) * 8 << "-bit, n = " << n
                                         << ", coordinate " << j << ": exact " << s
                                         << ", compensated error " << comp_error
                                         << " (bound " << bound << "), sum error " << plain_error);
    CHECK(comp_error <= bound);
    CHECK(comp_error <= plain_error);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("compensated: within its bound and no worse than Sum", Space, accuracy) {
  // double: M = 2^60, blocks of 1000 (998 ones each): sum |x| = 2.3e20, the
  // bound is 0.03, so the compensated sum is the exact integer, while a
  // plain running sum holding M loses every one added to it.
  check_more_accurate<Space, double>(100, 1000, 1152921504606846976.0);
  // float: M = 2^25 (ulp 4 there), 64 blocks of 40: the bound is about 30
  // of an exact sum of 2432, the plain sum loses ones by the hundred.
  check_more_accurate<Space, float>(64, 40, 33554432.0);
  // An empty sum and a tiny one.
  check_more_accurate<Space, double>(0, 3, 1.0);
  check_more_accurate<Space, double>(1, 3, 8.0);
}
TEST_CASE_TEMPLATE_APPLY(accuracy, Spaces);

TEST_CASE_TEMPLATE_DEFINE("compensated: the step's gradient equals the host reference", Space,
                          step_gradient) {
  const auto p = random_problem(501, 4, Kind::binary, 1, 31);
  const auto theta_h = random_vector(5, 32);
  const auto expected = reference_sums(p, 1, Kind::binary, theta_h, 0, p.n);
  auto check = [&](auto scalar) {
    using Scalar = decltype(scalar);
    const auto data = gradsum::Dataset<Scalar, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
    auto step = gradsum::make_step<Scalar>(Space(), gradsum::Linear(4), gradsum::BinaryCrossEntropy{},
                                           gradsum::SGD{}, gradsum::Objective{0.0, false},
                                           gradsum::Analytic{}, gradsum::Compensated{});
    auto theta = step.make_parameters();
    fill(theta, theta_h);
    const auto r = step.evaluate(theta, data);
    CHECK(r.count == p.n);
    const auto sums = to_host(step.sums());
    CHECK(relative_distance(sums, expected, 6) < Tolerance<Scalar>::partition);
  };
  check(double{});
  check(float{});
}
TEST_CASE_TEMPLATE_APPLY(step_gradient, Spaces);
