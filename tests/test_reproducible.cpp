// SPDX-License-Identifier: Apache-2.0
// The Reproducible reduction: the same bits for any order of the samples,
// any thread count (ctest runs this binary with 1 and 2 threads) and any
// backend, and no less accurate than plain double summation.

#include "test_helpers.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace gradsum_test;
using gradsum::Linear;
using gradsum::Softmax;

namespace {

// Features with magnitudes from 1e-8 to 1e8 and targets that cancel
// heavily: the plain sum's last bits depend on the order.
HostProblem hostile_problem(std::int64_t n, int d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-8, 8);
  HostProblem p;
  p.n = n;
  p.d = d;
  for (std::int64_t i = 0; i < n * d; ++i) p.x.push_back(unit(rng) * std::pow(10.0, decade(rng)));
  for (std::int64_t i = 0; i < n; ++i)
    p.y.push_back((i % 2 ? 1.0 : -1.0) * 1e8 + unit(rng) * std::pow(10.0, decade(rng)));
  return p;
}

template <class View>
std::vector<unsigned char> bits_of(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<unsigned char> bytes(h.extent(0) * sizeof(typename View::value_type));
  std::memcpy(bytes.data(), h.data(), bytes.size());
  return bytes;
}

// The summed gradient and loss over the rows `order` (a RowList), bits.
template <class Space, class Scalar, class Model, class Loss>
std::vector<unsigned char> reproducible_sums(const HostProblem& p, const Model& model,
                                             const Loss& loss, const std::vector<double>& theta,
                                             const std::vector<std::int64_t>& order) {
  using Memory = typename Space::memory_space;
  const auto data = gradsum::Dataset<Scalar, Memory>::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<Scalar>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         gradsum::Reproducible{});
  auto t = step.make_parameters();
  fill(t, theta);
  step.evaluate(t, data, row_list<Memory>(order));
  return bits_of(Kokkos::subview(step.sums(), Kokkos::make_pair(0, step.num_parameters() + 1)));
}

template <class Scalar, class Model, class Loss>
void check_order_and_backend_independence(const Model& model, const Loss& loss, Kind kind) {
  auto p = hostile_problem(301, model.num_features(), 42);
  if (kind != Kind::regression)
    for (std::int64_t i = 0; i < p.n; ++i) p.y[i] = double(i % model.num_outputs());
  const auto theta = random_vector(std::size_t(model.num_parameters()), 43, 1e-3);
  std::vector<std::int64_t> order(std::size_t(p.n));
  std::iota(order.begin(), order.end(), 0);
  using First = std::tuple_element_t<0, Spaces>;
  const auto reference = reproducible_sums<First, Scalar>(p, model, loss, theta, order);
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    std::shuffle(order.begin(), order.end(), rng);
    for_each_space(static_cast<Spaces*>(nullptr), [&](auto* tag) {
      using Space = std::remove_pointer_t<decltype(tag)>;
      const auto bits = reproducible_sums<Space, Scalar>(p, model, loss, theta, order);
      INFO(gradsum::space_name<Space>() << ", trial " << trial);
      CHECK(bits == reference);
    });
  }
}

}  // namespace

TEST_CASE("reproducible sums: the same bits for every order and backend") {
  check_order_and_backend_independence<double>(Linear(6), gradsum::SquaredError{},
                                               Kind::regression);
  check_order_and_backend_independence<float>(Linear(6), gradsum::SquaredError{},
                                              Kind::regression);
  check_order_and_backend_independence<double>(Softmax(5, 3), gradsum::SoftmaxCrossEntropy{},
                                               Kind::multiclass);
}

TEST_CASE("reproducible sums: parts of a batch, bitwise") {
  // Rows split into 1-8 contiguous parts, each summed on its own sample
  // by sample (AnalyticBody) and merged as bins, equal the whole batch's
  // bits through the step (on the host, Linear's batched path in rank-one
  // blocks: for squared error the same contributions); the plain parts'
  // sums, added in floating point, generally do not. d = 37 takes the
  // deposit's register groups and its remainder.
  using Space = std::tuple_element_t<0, Spaces>;
  using Memory = Space::memory_space;
  constexpr int w = gradsum::detail::binned_width;
  for (int d : {4, 37}) {
    const int width = d + 2;
    const auto p = hostile_problem(97, d, 5);
    const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
    auto step = gradsum::make_step<double>(Space(), Linear(d), gradsum::SquaredError{},
                                           gradsum::SGD{}, gradsum::Objective{0.0, false},
                                           gradsum::Analytic{}, gradsum::Reproducible{});
    auto theta = step.make_parameters();
    fill(theta, random_vector(std::size_t(d) + 1, 9, 1e-3));
    step.evaluate(theta, data);
    const auto whole = bits_of(Kokkos::subview(step.sums(), Kokkos::make_pair(0, width)));
    for (int parts = 1; parts <= 8; ++parts) {
      // Merge the parts' bins exactly as the step merges workers.
      std::vector<std::int64_t> merged(std::size_t(width) * w);
      for (int j = 0; j < width; ++j) merged[std::size_t(j) * w] = gradsum::detail::empty_window;
      for (int part = 0; part < parts; ++part) {
        const auto rows = gradsum::partition(p.n, parts, part);
        Kokkos::View<std::int64_t*, Memory> bins("bins", gradsum::detail::binned_work_size(width));
        const auto body = gradsum::detail::AnalyticBody<Linear, gradsum::SquaredError, double,
                                                        decltype(data.features()),
                                                        decltype(data.targets()), gradsum::RowRange>{
            {Linear(d), gradsum::SquaredError{}, theta.data(), data.features(), data.targets(), rows},
            d + 1};
        gradsum::Reproducible{}.reduce_bins<double>(Space(), "test", rows.size(), width, body, bins);
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bins);
        for (int j = 0; j < width; ++j)
          gradsum::detail::binned_merge(&merged[std::size_t(j) * w], &h(std::size_t(j) * w));
      }
      std::vector<double> values(std::size_t(width), 0.0);
      for (int j = 0; j < width; ++j)
        values[std::size_t(j)] = gradsum::detail::binned_value(&merged[std::size_t(j) * w]);
      std::vector<unsigned char> bytes(values.size() * sizeof(double));
      std::memcpy(bytes.data(), values.data(), bytes.size());
      CHECK_MESSAGE(bytes == whole, "d " << d << ", " << parts << " parts");
    }
  }
}

TEST_CASE("reproducible sums: Linear's batched and per-sample paths, the same bits") {
  // Squared error: both paths compute the same contributions (the same
  // dot product, residual and products), so their binned sums must be
  // the same bits; the batched path deposits them a block at a time,
  // partly in registers, the per-sample path one sample at a time.
  auto sums = [](auto scalar, auto* tag, int d, bool batched) {
    using Scalar = decltype(scalar);
    using Space = std::remove_pointer_t<decltype(tag)>;
    const auto p = hostile_problem(301, d, std::uint64_t(d));
    const auto theta = random_vector(std::size_t(d) + 1, 43, 1e-3);
    std::vector<std::int64_t> order(std::size_t(p.n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
    Linear model(d);
    model.batched = batched;
    return reproducible_sums<Space, Scalar>(p, model, gradsum::SquaredError{}, theta, order);
  };
  for_each_space(static_cast<Spaces*>(nullptr), [&](auto* tag) {
    for (int d : {1, 8, 16, 37, 70}) {
      INFO(gradsum::space_name<std::remove_pointer_t<decltype(tag)>>() << ", d " << d);
      CHECK(sums(double{}, tag, d, true) == sums(double{}, tag, d, false));
      CHECK(sums(float{}, tag, d, true) == sums(float{}, tag, d, false));
    }
  });
}

TEST_CASE("reproducible sums: Linear's batched logits are forward()'s, bit for bit") {
  // The two paths above agree, and a sample's contribution does not depend
  // on its place in a block, only if the block's logits are forward()'s to
  // the bit, in every build (this file is also built with -mavx2 and
  // -mavx512f). Squared error with y = 0 gives dz = z exactly; data of
  // order one keep every bit of z visible (the test above, with small
  // logits against targets of order one, does not see a changed last bit
  // of z). A version of the logits that took eight samples at a time
  // failed here under -march=native: GCC fused some multiply-adds in one
  // path and not in the other.
  auto check = [](auto scalar, int d) {
    using Scalar = decltype(scalar);
    constexpr int B = Linear::block_size;
    std::mt19937_64 rng{std::uint64_t(d)};
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<Scalar> x(std::size_t(B) * std::size_t(d)), theta(std::size_t(d) + 1);
    for (auto& v : x) v = Scalar(u(rng));
    for (auto& v : theta) v = Scalar(u(rng));
    const Scalar* rows[B];
    for (int s = 0; s < B; ++s) rows[s] = &x[std::size_t(s) * std::size_t(d)];
    const Scalar y[B] = {};
    const Linear model(d);
    for (int m : {B, 13, 8, 1}) {
      Scalar dz[B], value[B];
      model.block_residuals(gradsum::SquaredError{}, theta.data(), rows, y, m, dz, value);
      int differ = 0;
      for (int s = 0; s < m; ++s) {
        Scalar z;
        model.forward(theta.data(), rows[s], &z);
        differ += std::memcmp(&z, &dz[s], sizeof z) != 0;
      }
      INFO(std::string(sizeof(Scalar) == 4 ? "float" : "double") << ", d " << d << ", m " << m);
      CHECK(differ == 0);
    }
  };
  // Every width up to 72: each count of whole groups that the short rows'
  // loops are compiled for, with and without a rest; then a long row.
  for (int d = 1; d <= 72; ++d) {
    check(float{}, d);
    check(double{}, d);
  }
  check(float{}, 300);
  check(double{}, 300);
}

TEST_CASE("Linear::forward adds the dot product in its documented order, bit for bit") {
  // forward()'s logit is theta_d + the dot product with K partial sums
  // (K = 128 bytes' worth of Scalar for rows of 256 bytes or more, else 32
  // bytes' worth): s[k] takes the products j = k, k + K, ... of the whole
  // groups of K, s[0] the rest in order, and then s[k] += s[k + W] for
  // W = K/2, K/4, ..., 1. The products here are exact (a few significant
  // bits each), so fused and unfused multiply-adds agree and only the
  // order of the additions shows; the magnitudes span 2^-40 … 2^40, so
  // every order rounds differently (checked against the plain order).
  auto check = [](auto scalar) {
    using Scalar = decltype(scalar);
    std::mt19937_64 rng{7};
    std::uniform_int_distribution<int> mantissa(-1023, 1023), exponent(-20, 20);
    auto value = [&] { return Scalar(std::ldexp(double(mantissa(rng)), exponent(rng))); };
    int in_order = 0, differ_plain = 0, cases = 0;
    for (int d = 1; d <= 300; ++d) {
      std::vector<Scalar> theta(std::size_t(d) + 1), x(static_cast<std::size_t>(d));
      for (auto& v : theta) v = value();
      for (auto& v : x) v = value();
      const int K = (d * int(sizeof(Scalar)) >= 256 ? 128 : 32) / int(sizeof(Scalar));
      std::vector<Scalar> s(static_cast<std::size_t>(K), Scalar(0));
      int j = 0;
      for (; j + K <= d; j += K)
        for (int k = 0; k < K; ++k) s[k] = s[k] + theta[j + k] * x[j + k];
      for (; j < d; ++j) s[0] = s[0] + theta[j] * x[j];
      for (int w = K / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) s[k] = s[k] + s[k + w];
      const Scalar expected = theta[d] + s[0];
      Scalar plain = 0;
      for (j = 0; j < d; ++j) plain = plain + theta[j] * x[j];
      plain = theta[d] + plain;

      Scalar z;
      Linear(d).forward(theta.data(), x.data(), &z);
      in_order += std::memcmp(&z, &expected, sizeof z) == 0;
      differ_plain += std::memcmp(&plain, &expected, sizeof z) != 0;
      ++cases;
    }
    INFO((sizeof(Scalar) == 4 ? "float" : "double") << ": " << in_order << " of " << cases
                                                    << " in order; the plain order differs in "
                                                    << differ_plain);
    CHECK(in_order == cases);
    CHECK(differ_plain > cases / 2);  // the data tell the orders apart
  };
  check(float{});
  check(double{});
}

TEST_CASE("reproducible sums are at least as accurate as plain double sums") {
  // sum_i x_i with a known exact value: pairs (+big_i, -big_i) cancel
  // exactly, and small terms that are exact multiples of 2^-40 add up to a
  // known total.
  std::mt19937_64 rng(11);
  std::vector<double> values;
  double exact_small = 0;  // exact: few terms, all multiples of 2^-40 below 2^10
  for (int i = 0; i < 2000; ++i) {
    const double big = std::ldexp(double(rng() % 1000000 + 1), int(rng() % 40));
    values.push_back(big);
    values.push_back(-big);
    const double small = std::ldexp(double(rng() % 1024), -40);
    values.push_back(small);
    exact_small += small;
  }
  std::shuffle(values.begin(), values.end(), rng);
  double plain = 0;
  std::vector<std::int64_t> acc{gradsum::detail::empty_window, 0, 0, 0};
  for (double v : values) {
    plain += v;
    gradsum::detail::binned_add(acc.data(), v);
  }
  const double reproducible = gradsum::detail::binned_value(acc.data());
  MESSAGE("exact " << exact_small << ", plain error " << std::fabs(plain - exact_small)
                   << ", reproducible error " << std::fabs(reproducible - exact_small));
  CHECK(std::fabs(reproducible - exact_small) <= std::fabs(plain - exact_small));
  // The method's bound: each value loses less than one unit of the lowest
  // bin of the window, 2^(32 (t - 2)) with t = floor(e_max / 32), here
  // e_max <= 60, so t = 1 and the unit is 2^-32.
  CHECK(std::fabs(reproducible - exact_small) <= double(values.size()) * std::ldexp(1.0, -32));

  // Non-finite values poison the sum.
  std::vector<std::int64_t> poisoned{gradsum::detail::empty_window, 0, 0, 0};
  gradsum::detail::binned_add(poisoned.data(), 1.0);
  gradsum::detail::binned_add(poisoned.data(), std::numeric_limits<double>::infinity());
  CHECK(std::isnan(gradsum::detail::binned_value(poisoned.data())));
  // Subnormal and huge magnitudes split exactly.
  for (double v : {4.9e-324, 1e-310, 1e300, -3.5e307, 0.1, -7.0}) {
    std::vector<std::int64_t> one{gradsum::detail::empty_window, 0, 0, 0};
    gradsum::detail::binned_add(one.data(), v);
    const double back = gradsum::detail::binned_value(one.data());
    INFO("v = " << v << ", back = " << back);
    CHECK(back == v);
  }
}

TEST_CASE_TEMPLATE_DEFINE("reproducible training agrees with the plain sum to rounding", Space,
                          reproducible_training) {
  const auto problem = random_problem(200, 5, Kind::binary, 2, 3);
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      problem.n, problem.d, problem.x, problem.y);
  auto plain = gradsum::make_step<double>(Space(), Linear(5), gradsum::BinaryCrossEntropy{},
                                          gradsum::SGD{0.5});
  auto exact = gradsum::make_step<double>(Space(), Linear(5), gradsum::BinaryCrossEntropy{},
                                          gradsum::SGD{0.5}, gradsum::Objective{},
                                          gradsum::Analytic{}, gradsum::Reproducible{});
  auto a = plain.make_parameters();
  auto b = exact.make_parameters();
  gradsum::StepResult ra, rb;
  for (int k = 0; k < 20; ++k) {
    ra = plain(a, data);
    rb = exact(b, data);
  }
  CHECK(relative_distance(to_host(b), to_host(a), 6) <= 1e-12);
  CHECK(rb.loss == doctest::Approx(ra.loss).epsilon(1e-12));
  CHECK(rb.count == 200);
}
TEST_CASE_TEMPLATE_APPLY(reproducible_training, Spaces);

namespace {
// (1 + 2^-30)(1 - 2^-30) - 1 is exactly -2^-60; the product alone rounds
// to 1 in double, so one rounding gives -2^-60 and two give 0.
constexpr double fma_a = 1.0 + 0x1p-30, fma_b = 1.0 - 0x1p-30, fma_c = -1.0;

#if defined(__x86_64__) && defined(__GNUC__)
// multiply_add<false> inlined into code compiled for FMA: GCC would fuse
// it from -O2 on (Clang, within the expression, at any level) unless the
// build turns contraction off, as gradsum::gradsum does.
__attribute__((target("avx2,fma"))) double unfused_on_fma_target(double a, double b, double c) {
  return gradsum::detail::multiply_add<false>(a, b, c);
}
#endif
}  // namespace

TEST_CASE("multiply_add: two roundings unless fused, one where fused and the target has FMA") {
  CHECK(gradsum::detail::multiply_add<false>(fma_a, fma_b, fma_c) == 0.0);
  CHECK(gradsum::detail::multiply_add<false>(float(1 + 0x1p-13), float(1 - 0x1p-13), -1.0f) ==
        0.0f);
  const double fused = gradsum::detail::multiply_add<true>(fma_a, fma_b, fma_c);
#ifdef __FP_FAST_FMA
  CHECK(fused == -0x1p-60);
#else
  CHECK(fused == 0.0);
#endif
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // Through a volatile, so that the call is not folded at compile time.
    volatile double a = fma_a;
    CHECK(unfused_on_fma_target(a, fma_b, fma_c) == 0.0);
  }
#endif
}
