// SPDX-License-Identifier: Apache-2.0
// The vectorizable exp and log1p (loss/detail/vector_math.hpp) against
// std::exp / std::log1p in long double over dense sweeps and at edge
// values; the losses' block forms against their per-sample forms; and the
// linear model's batched gradient against the textbook sums.

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

using namespace gradsum_test;
using gradsum::BinaryCrossEntropy;
using gradsum::Linear;
using gradsum::RowRange;
using gradsum::SquaredError;
namespace vm = gradsum::detail::vector_math;

namespace {

// The error of `got` in units in the last place of Scalar at the exact
// value `exact` (the spacing of Scalar there; the smallest subnormal below
// the normal range). A result beyond the largest finite Scalar must be +inf.
template <class Scalar>
long double ulp_error(Scalar got, long double exact) {
  using limits = std::numeric_limits<Scalar>;
  if (exact > (long double)limits::max()) return got == limits::infinity() ? 0 : 1e30L;
  if (!std::isfinite(got)) return 1e30L;
  const long double magnitude = std::fabs(exact);
  long double ulp = limits::denorm_min();
  if (magnitude >= (long double)limits::min())
    ulp = std::ldexp(1.0L, std::ilogb(magnitude) - (limits::digits - 1));
  return std::fabs((long double)got - exact) / ulp;
}

template <class Scalar>
Scalar from_bits(std::uint64_t b) {
  using U = typename vm::Constants<Scalar>::bits_type;
  const U narrow = U(b);
  Scalar x;
  std::memcpy(&x, &narrow, sizeof x);
  return x;
}

// Every positive Scalar's bit pattern, by a stride that visits about
// `points` of them across every binade (subnormals included), then
// `points` evenly spaced values of [lo, hi].
template <class Scalar, class F>
void sweep(Scalar lo, Scalar hi, std::uint64_t points, F&& f) {
  const std::uint64_t infinity_bits = sizeof(Scalar) == 4 ? 0x7f800000u : 0x7ff0000000000000u;
  const std::uint64_t stride = infinity_bits / points | 1;  // odd: varied low bits
  for (std::uint64_t b = 0; b < infinity_bits; b += stride) {
    const Scalar x = from_bits<Scalar>(b);
    if (x >= lo && x <= hi) f(x);
    if (-x >= lo && -x <= hi) f(-x);
  }
  for (std::uint64_t i = 0; i <= points; ++i)
    f(Scalar(lo + (long double)(hi - lo) * (long double)i / (long double)points));
}

template <class Scalar>
std::string type_name() {
  return sizeof(Scalar) == 4 ? "float" : "double";
}

// The accuracy stated in vector_math.hpp: the maxima these sweeps measured
// (1.12 / 1.15 ulp for exp, 1.90 / 1.92 for log1p_unit, float / double),
// rounded up.
constexpr long double exp_ulps = 1.2L;
constexpr long double log1p_ulps = 2.0L;

// The largest ulp error of f against the long double `exact` over
// sweep(lo, hi), printed and checked against `bound`.
template <class Scalar, class F, class Exact>
void check_sweep(const char* name, F f, Exact exact, Scalar lo, Scalar hi, long double bound) {
  long double worst = 0;
  Scalar worst_at = 0;
  sweep<Scalar>(lo, hi, 1000000, [&](Scalar x) {
    const long double error = ulp_error(f(x), exact((long double)x));
    if (error > worst) worst = error, worst_at = x;
  });
  MESSAGE(std::string(name) << "<" << type_name<Scalar>() << ">: max error " << double(worst)
                            << " ulp at " << double(worst_at));
  INFO(std::string(name) << " worst at " << double(worst_at));
  CHECK(worst <= bound);
}

template <class Scalar>
void check_exp_sweep() {
  check_sweep<Scalar>(
      "exp", [](Scalar x) { return vm::exp(x); }, [](long double x) { return std::exp(x); },
      Scalar(-750), Scalar(750), exp_ulps);
}

template <class Scalar>
void check_log1p_sweep() {
  check_sweep<Scalar>(
      "log1p_unit", [](Scalar e) { return vm::log1p_unit(e); },
      [](long double e) { return std::log1p(e); }, Scalar(0), Scalar(1), log1p_ulps);
}

template <class Scalar>
void check_edges() {
  using limits = std::numeric_limits<Scalar>;
  const Scalar inf = limits::infinity(), nan = limits::quiet_NaN();
  CHECK(vm::exp(Scalar(0)) == Scalar(1));
  CHECK(vm::exp(-Scalar(0)) == Scalar(1));
  CHECK(vm::exp(inf) == inf);
  CHECK(vm::exp(-inf) == Scalar(0));
  CHECK(std::isnan(vm::exp(nan)));
  CHECK(std::isnan(vm::exp(-nan)));
  CHECK(vm::exp(limits::max()) == inf);
  CHECK(vm::exp(limits::lowest()) == Scalar(0));
  CHECK(vm::exp(Scalar(1e30)) == inf);
  CHECK(vm::exp(Scalar(-1e30)) == Scalar(0));
  // Both sides of the overflow threshold ln(max) and of the last subnormal.
  const Scalar hi = vm::Constants<Scalar>::exp_hi;
  CHECK(std::isfinite(vm::exp(hi)));
  CHECK(ulp_error(vm::exp(hi), std::exp((long double)hi)) <= exp_ulps);
  CHECK(vm::exp(std::nextafter(hi, inf)) == inf);
  const Scalar last = Scalar(std::log((long double)limits::denorm_min()));
  CHECK(ulp_error(vm::exp(last), std::exp((long double)last)) <= exp_ulps);
  CHECK(vm::exp(vm::Constants<Scalar>::exp_lo) == Scalar(0));

  CHECK(vm::log1p_unit(Scalar(0)) == Scalar(0));
  CHECK(vm::log1p_unit(limits::denorm_min()) == limits::denorm_min());
  CHECK(vm::log1p_unit(limits::min()) == limits::min());
  CHECK(ulp_error(vm::log1p_unit(Scalar(1)), std::log1p(1.0L)) <= log1p_ulps);
  CHECK(std::isnan(vm::log1p_unit(nan)));

  CHECK(vm::minus_abs(Scalar(3)) == Scalar(-3));
  CHECK(vm::minus_abs(Scalar(-3)) == Scalar(-3));
  CHECK(vm::minus_abs(inf) == -inf);
  CHECK(std::isnan(vm::minus_abs(nan)));
  CHECK(vm::select(true, Scalar(1), nan) == Scalar(1));
  CHECK(std::isnan(vm::select(false, Scalar(1), nan)));
}

// The block form of a loss against its per-sample value_and_derivative on
// `zs` x `ys`: equal where those are not finite, within 4 ulp otherwise.
template <class Scalar, class Loss>
void check_block_form(const Loss& loss, const std::vector<Scalar>& zs,
                      const std::vector<Scalar>& ys) {
  constexpr int B = 8;
  const Scalar eps = std::numeric_limits<Scalar>::epsilon();
  const Scalar tiny = std::numeric_limits<Scalar>::denorm_min();
  auto same = [](Scalar a, Scalar b, Scalar tolerance) {
    if (std::isnan(b)) return bool(std::isnan(a));
    if (!std::isfinite(b)) return a == b;
    return std::fabs(a - b) <= tolerance;
  };
  for (Scalar y : ys)
    for (std::size_t first = 0; first < zs.size(); first += B) {
      const int m = int(std::min<std::size_t>(B, zs.size() - first));
      Scalar z[B], yb[B], dz[B];
      for (int s = 0; s < B; ++s) {
        // Padding lanes hold values whose loss would change the sum.
        z[s] = s < m ? zs[first + std::size_t(s)] : Scalar(-1e3);
        yb[s] = s < m ? y : Scalar(1);
      }
      const Scalar total = gradsum::detail::block_value_and_derivative<B>(loss, z, yb, m, dz);
      Scalar expected_total = 0;
      for (int s = 0; s < m; ++s) {
        Scalar expected_dz = 0;
        const Scalar expected = gradsum::detail::value_and_derivative(loss, z + s, 1, y,
                                                                      &expected_dz);
        expected_total += expected;
        INFO("z = " << double(z[s]) << ", y = " << double(y));
        CHECK(same(dz[s], expected_dz, 4 * eps * (std::fabs(expected_dz + y) + 1e-30f) + tiny));
      }
      INFO("block starting at z = " << double(zs[first]) << ", y = " << double(y));
      CHECK(same(total, expected_total, 4 * eps * std::fabs(expected_total) + 4 * tiny));
    }
}

template <class Scalar>
std::vector<Scalar> edge_logits() {
  using limits = std::numeric_limits<Scalar>;
  std::vector<Scalar> zs{Scalar(0), -Scalar(0), limits::denorm_min(), -limits::denorm_min(),
                         Scalar(1e-20), Scalar(-1e-20), Scalar(0.5), Scalar(-0.5),
                         Scalar(1), Scalar(-1), Scalar(30), Scalar(-30),
                         Scalar(88.8), Scalar(-88.8), Scalar(104), Scalar(-104),
                         Scalar(750), Scalar(-750), Scalar(1e30), Scalar(-1e30),
                         limits::max(), limits::lowest(), limits::infinity(),
                         -limits::infinity(), limits::quiet_NaN()};
  for (int i = -400; i <= 400; ++i) zs.push_back(Scalar(i) * Scalar(0.37));
  return zs;
}

// Summed gradient and loss through a Step with the given model, over
// `rows` of the problem.
template <class Space, class Scalar, class Loss, class Reduction = gradsum::Sum>
std::vector<double> step_sums(const HostProblem& p, const Linear& model, const Loss& loss,
                              const std::vector<double>& theta,
                              const std::vector<std::int64_t>& order, Reduction reduction = {}) {
  using Memory = typename Space::memory_space;
  const auto data = gradsum::Dataset<Scalar, Memory>::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<Scalar>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         reduction);
  auto t = step.make_parameters();
  fill(t, theta);
  step.evaluate(t, data, row_list<Memory>(order));
  auto sums = to_host(step.sums());
  sums.resize(std::size_t(step.num_parameters()) + 1);
  return sums;
}

template <class Space, class Scalar, class Loss>
void check_batched_linear(const Loss& loss, Kind kind, std::int64_t n, int d, double scale,
                          std::uint64_t seed) {
  static_assert(gradsum::detail::has_block_gradient<Linear, Loss, Scalar>::value,
                "Linear must offer the batched path for this loss");
  const auto p = random_problem(n, d, kind, 2, seed, scale);
  const auto theta = random_vector(std::size_t(d) + 1, seed + 1);
  const auto reference = reference_sums(p, 1, kind, theta, 0, n);
  // Every row, in a shuffled order, and every other row: blocks hold rows
  // from all over the data set, and n is no multiple of the block size.
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::mt19937_64 rng(seed + 2);
  std::shuffle(all.begin(), all.end(), rng);
  Linear batched(d), per_sample(d);
  batched.batched = true;
  per_sample.batched = false;
  INFO("n = " << n << ", d = " << d << ", scale = " << scale << ", seed = " << seed);
  // The reference tolerance is test_step's (the data are rounded to
  // Scalar, and a few logits come from cancelling dot products).
  const double tolerance = Tolerance<Scalar>::partition * 10;
  const auto got = step_sums<Space, Scalar>(p, batched, loss, theta, all);
  CHECK(relative_distance(got, reference, got.size()) <= tolerance);
  const auto got_per_sample = step_sums<Space, Scalar>(p, per_sample, loss, theta, all);
  CHECK(relative_distance(got, got_per_sample, got.size()) <= Tolerance<Scalar>::partition);

  std::vector<std::int64_t> odd;
  for (std::int64_t i = 1; i < n; i += 2) odd.push_back(i);
  if (odd.empty()) return;
  std::vector<long double> odd_reference(reference.size(), 0.0L);
  for (std::int64_t i : odd) {
    const auto one = reference_sums(p, 1, kind, theta, i, i + 1);
    for (std::size_t j = 0; j < one.size(); ++j) odd_reference[j] += one[j];
  }
  const auto got_odd = step_sums<Space, Scalar>(p, batched, loss, theta, odd);
  CHECK(relative_distance(got_odd, odd_reference, got_odd.size()) <= tolerance);
}

}  // namespace

TEST_CASE("vector_math: exp within the stated ulps of std::exp over a dense sweep") {
  check_exp_sweep<float>();
  check_exp_sweep<double>();
}

TEST_CASE("vector_math: log1p_unit within the stated ulps of std::log1p on [0, 1]") {
  check_log1p_sweep<float>();
  check_log1p_sweep<double>();
}

TEST_CASE("vector_math: zeros, infinities, NaN, overflow and underflow") {
  check_edges<float>();
  check_edges<double>();
}

TEST_CASE("losses: the block forms match the per-sample forms, edge logits included") {
  const std::vector<float> yf{0.0f, 0.3f, 1.0f};
  const std::vector<double> yd{0.0, 0.3, 1.0};
  check_block_form(BinaryCrossEntropy{}, edge_logits<float>(), yf);
  check_block_form(BinaryCrossEntropy{}, edge_logits<double>(), yd);
  std::vector<double> finite_d;
  for (int i = -50; i <= 50; ++i) finite_d.push_back(i * 0.73);
  std::vector<float> finite_f(finite_d.begin(), finite_d.end());
  check_block_form(SquaredError{}, finite_f, yf);
  check_block_form(SquaredError{}, finite_d, yd);
  // A loss without a block form keeps the per-sample path.
  CHECK_FALSE(
      gradsum::detail::has_block_gradient<Linear, gradsum::SoftmaxCrossEntropy, double>::value);
}

namespace {
// SoftmaxCrossEntropy's fused form (the layer-wise path's) against the
// closed form in long double, l = log sum_c e^{z_c} - z_y and
// dl/dz = softmax(z) - onehot(y), for k logits drawn at `scale`: within
// 4 k eps of it, as the libm form is; non-finite logits give a non-finite
// loss in both forms.
template <class Scalar>
void check_fused_softmax(int k, double scale, std::mt19937& rng) {
  const gradsum::SoftmaxCrossEntropy loss;
  const Scalar eps = std::numeric_limits<Scalar>::epsilon();
  std::normal_distribution<double> normal(0.0, scale);
  const auto n = std::size_t(k);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Scalar> z(n), fused(n), plain(n);
    for (auto& v : z) v = Scalar(normal(rng));
    const Scalar y = Scalar(trial % k);
    long double m = z[0];
    for (int c = 1; c < k; ++c) m = std::max<long double>(m, z[std::size_t(c)]);
    long double s = 0;
    for (int c = 0; c < k; ++c) s += std::exp((long double)z[std::size_t(c)] - m);
    const long double value = m + std::log(s) - z[std::size_t(y)];
    const Scalar got = gradsum::detail::value_and_derivative<true>(loss, z.data(), k, y,
                                                                   fused.data());
    const Scalar libm = gradsum::detail::value_and_derivative(loss, z.data(), k, y, plain.data());
    INFO(type_name<Scalar>() << ", k = " << k << ", scale " << scale << ", trial " << trial);
    const long double tolerance = 4.0L * k * eps;
    CHECK(std::fabs(got - value) <= tolerance * (std::fabs(value) + std::fabs(m) + 1));
    CHECK(std::fabs(libm - value) <= tolerance * (std::fabs(value) + std::fabs(m) + 1));
    for (int c = 0; c < k; ++c) {
      const auto j = std::size_t(c);
      const long double exact = std::exp((long double)z[j] - m) / s - (c == int(y) ? 1 : 0);
      CHECK(std::fabs(fused[j] - exact) <= tolerance);
      CHECK(std::fabs(plain[j] - exact) <= tolerance);
    }
  }
  using limits = std::numeric_limits<Scalar>;
  for (const Scalar bad : {limits::quiet_NaN(), limits::infinity(), -limits::infinity()}) {
    std::vector<Scalar> z(n, Scalar(0.5)), dz(n);
    z[std::size_t(k - 1)] = bad;
    const Scalar y = Scalar(k - 1);
    const Scalar got = gradsum::detail::value_and_derivative<true>(loss, z.data(), k, y, dz.data());
    const Scalar libm = gradsum::detail::value_and_derivative(loss, z.data(), k, y, dz.data());
    INFO(type_name<Scalar>() << ", k = " << k << ", logit " << double(bad));
    CHECK_FALSE(std::isfinite(got));
    CHECK_FALSE(std::isfinite(libm));
  }
}
}  // namespace

TEST_CASE("SoftmaxCrossEntropy: the fused form matches the closed form, as the libm form does") {
  std::mt19937 rng(29);
  for (const int k : {2, 3, 10, 17, 40})
    for (const double scale : {0.1, 3.0, 40.0}) {
      check_fused_softmax<float>(k, scale, rng);
      check_fused_softmax<double>(k, scale, rng);
    }
  // A loss without a fused form takes its combined member.
  CHECK_FALSE(gradsum::detail::has_fused_value_and_derivative<BinaryCrossEntropy, float>::value);
  CHECK(gradsum::detail::has_fused_value_and_derivative<gradsum::SoftmaxCrossEntropy,
                                                        float>::value);
}

namespace {
// A model that changes Linear's backward; it inherits block_gradient.
struct DoubledBackward : Linear {
  using Linear::Linear;
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    const Scalar twice = 2 * dz[0];
    Linear::backward(theta, x, &twice, g);
  }
};
}  // namespace

TEST_CASE_TEMPLATE_DEFINE("Linear: a derived model's own backward is not bypassed", Space,
                          linear_derived) {
  static_assert(gradsum::detail::has_block_gradient<Linear, BinaryCrossEntropy, double>::value);
  static_assert(!gradsum::detail::has_block_gradient<gradsum::MLP, gradsum::SoftmaxCrossEntropy,
                                                     double>::value,
                "MLP has no batched path (per sample or layer-wise)");
  static_assert(
      !gradsum::detail::has_block_gradient<DoubledBackward, BinaryCrossEntropy, double>::value,
      "an inherited batched path would skip the derived backward");
  // Through the step: twice the textbook gradient, the same loss.
  const auto p = random_problem(37, 5, Kind::binary, 2, 91);
  const auto theta = random_vector(6, 92);
  const auto reference = reference_sums(p, 1, Kind::binary, theta, 0, p.n);
  std::vector<std::int64_t> all(37);
  std::iota(all.begin(), all.end(), 0);
  using Memory = typename Space::memory_space;
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<double>(Space(), DoubledBackward(5), BinaryCrossEntropy{},
                                         gradsum::SGD{}, gradsum::Objective{0.0, false});
  auto t = step.make_parameters();
  fill(t, theta);
  step.evaluate(t, data, row_list<Memory>(all));
  auto got = to_host(step.sums());
  for (std::size_t j = 0; j < 6; ++j)
    CHECK(got[j] == doctest::Approx(double(2 * reference[j])).epsilon(1e-12));
  CHECK(got[6] == doctest::Approx(double(reference[6])).epsilon(1e-12));
}
TEST_CASE_TEMPLATE_APPLY(linear_derived, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Linear: the batched gradient equals the textbook sums", Space,
                          linear_batched) {
  std::uint64_t seed = 100;
  for (std::int64_t n : {std::int64_t(1), std::int64_t(3), std::int64_t(101)})
    // d = 70 and 300 take forward()'s long-row dot product (K = 128 bytes)
    // with a remainder; 1, 7 and 32 the short one (double 32: the long).
    for (int d : {1, 7, 32, 70, 300}) {
      // scale 4 puts some logits into the tails (|z| ~ 50 at d = 32; the
      // logits grow as sqrt(d), so wider rows get a smaller scale rather
      // than gradients below the normal range).
      for (double scale : {1.0, 4.0}) {
        const double s = d > 32 ? scale * std::sqrt(32.0 / d) : scale;
        check_batched_linear<Space, double>(BinaryCrossEntropy{}, Kind::binary, n, d, s, ++seed);
        check_batched_linear<Space, float>(BinaryCrossEntropy{}, Kind::binary, n, d, s, ++seed);
      }
      check_batched_linear<Space, double>(SquaredError{}, Kind::regression, n, d, 1.0, ++seed);
      check_batched_linear<Space, float>(SquaredError{}, Kind::regression, n, d, 1.0, ++seed);
    }
}
TEST_CASE_TEMPLATE_APPLY(linear_batched, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Linear: Reproducible on the batched path, any order, the same bits",
                          Space, linear_reproducible) {
  // The batched path hands Reproducible each sample's contribution from
  // the block arithmetic (vectorized exp and log1p): the same bits for any
  // order of the rows, so for any place of a sample in its block; the
  // long double reference and the per-sample path (libm) within rounding.
  // d = 37: the deposit's register groups and its remainder.
  const int d = 37;
  const std::int64_t n = 203;
  const auto p = random_problem(n, d, Kind::binary, 2, 77);
  const auto theta = random_vector(std::size_t(d) + 1, 78);
  const auto reference = reference_sums(p, 1, Kind::binary, theta, 0, n);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  Linear batched(d), per_sample(d);
  per_sample.batched = false;
  const auto a = step_sums<Space, double>(p, batched, BinaryCrossEntropy{}, theta, all,
                                          gradsum::Reproducible{});
  CHECK(relative_distance(a, reference, a.size()) <= Tolerance<double>::partition * 10);
  const auto b = step_sums<Space, double>(p, per_sample, BinaryCrossEntropy{}, theta, all,
                                          gradsum::Reproducible{});
  CHECK(relative_distance(a, b, a.size()) <= Tolerance<double>::partition);
  std::mt19937_64 rng(79);
  for (int trial = 0; trial < 3; ++trial) {
    std::shuffle(all.begin(), all.end(), rng);
    const auto shuffled = step_sums<Space, double>(p, batched, BinaryCrossEntropy{}, theta, all,
                                                   gradsum::Reproducible{});
    INFO("trial " << trial);
    CHECK(std::memcmp(a.data(), shuffled.data(), a.size() * sizeof(double)) == 0);
  }
}
TEST_CASE_TEMPLATE_APPLY(linear_reproducible, Spaces);

namespace {
// Counts the calls ahead(s) that Linear's batched path makes; calls[size]
// counts those with s outside [0, size).
struct CountingAhead {
  int* calls;
  int size;
  KOKKOS_FUNCTION void operator()(int s) const { ++calls[s >= 0 && s < size ? s : size]; }
};

template <class Scalar>
void check_ahead_calls(int d, int m) {
  CAPTURE(d);
  CAPTURE(m);
  constexpr int B = Linear::block_size;
  const Linear model(d);
  std::mt19937_64 rng(std::uint64_t(d * 100 + m));
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Scalar> x(std::size_t(B) * std::size_t(d)), theta(std::size_t(d) + 1);
  for (auto& v : x) v = Scalar(u(rng));
  for (auto& v : theta) v = Scalar(u(rng));
  const Scalar* xs[B] = {};
  Scalar ys[B] = {};
  for (int s = 0; s < m; ++s) {
    xs[s] = x.data() + std::size_t(s) * std::size_t(d);
    ys[s] = Scalar(s % 2);
  }
  std::vector<Scalar> plain(std::size_t(d) + 1, Scalar(0)), asked(plain);
  std::vector<int> calls(B + 1, 0);
  const Scalar value =
      model.block_gradient(BinaryCrossEntropy{}, theta.data(), xs, ys, m, plain.data());
  const Scalar value_asked = model.block_gradient(BinaryCrossEntropy{}, theta.data(), xs, ys, m,
                                                  asked.data(), CountingAhead{calls.data(), B});
  for (int s = 0; s <= B; ++s) {
    CAPTURE(s);
    CHECK(calls[std::size_t(s)] == (s < m ? 1 : 0));
  }
  CHECK(std::memcmp(&value, &value_asked, sizeof value) == 0);
  CHECK(std::memcmp(plain.data(), asked.data(), plain.size() * sizeof(Scalar)) == 0);
}
}  // namespace

TEST_CASE("Linear: the batched path calls ahead once per sample, and it changes no bit") {
  // Short rows (pairs of logits), and rows of 256 bytes or more (half
  // blocks, single logits); whole, odd and single-sample blocks.
  for (int m : {Linear::block_size, 7, 1}) {
    check_ahead_calls<float>(8, m);
    check_ahead_calls<double>(9, m);
    check_ahead_calls<float>(70, m);
    check_ahead_calls<double>(40, m);
  }
}
