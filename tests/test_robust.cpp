// SPDX-License-Identifier: Apache-2.0
// Robust aggregation over in-process virtual workers (parts of a batch):
// the combination rules against a host reference written from their
// definitions, the textbook corrupted-worker case through a whole step,
// knob validation, and bitwise independence of the thread count.

#include "robust_reference.hpp"
#include "test_helpers.hpp"

#include <cstring>
#include <limits>

using namespace gradsum_test;
using gradsum::CoordinateMedian;
using gradsum::Linear;
using gradsum::NormClip;
using gradsum::RobustRule;
using gradsum::TrimmedMean;
using gradsum::VirtualWorkers;

namespace {

template <class Scalar>
struct RobustTolerance;
template <>
struct RobustTolerance<double> {
  static constexpr double relative = 1e-13;
};
template <>
struct RobustTolerance<float> {
  static constexpr double relative = 2e-6;
};

RobustRule make_rule(Rule rule, int k, double c) {
  if (rule == Rule::median) return CoordinateMedian{};
  if (rule == Rule::trimmed) return TrimmedMean{k};
  return NormClip{c};
}

// detail::robust_combine on `Space` over host worker vectors.
template <class Space, class Scalar>
std::vector<double> combine_on(const std::vector<std::vector<double>>& workers, RobustRule rule,
                               std::int64_t robust) {
  using Memory = typename Space::memory_space;
  const int W = int(workers.size());
  const std::int64_t n = std::int64_t(workers[0].size());
  Kokkos::View<Scalar*, Memory> values("values", std::size_t(W * n)), factors("factors", W),
      out("out", std::size_t(n));
  auto h = Kokkos::create_mirror_view(values);
  for (int w = 0; w < W; ++w)
    for (std::int64_t j = 0; j < n; ++j) h(w * n + j) = Scalar(workers[w][j]);
  Kokkos::deep_copy(values, h);
  gradsum::detail::robust_combine(Space(), rule, W, robust, n, values, factors, out);
  Space().fence();
  return to_host(out);
}

// |a - b| <= tol * (sum over workers of |x_wj|) per coordinate.
void check_close(const std::vector<double>& got, const std::vector<long double>& expected,
                 const std::vector<std::vector<double>>& workers, double tol) {
  for (std::size_t j = 0; j < got.size(); ++j) {
    long double scale = 0;
    for (const auto& w : workers) scale += std::fabs((long double)w[j]);
    scale *= (long double)workers.size();
    INFO("coordinate " << j << ": got " << got[j] << ", expected " << double(expected[j]));
    CHECK(std::fabs((long double)got[j] - expected[j]) <= tol * (scale > 0 ? scale : 1));
  }
}

template <class Space, class Scalar>
void check_rules_against_reference() {
  std::mt19937_64 rng(2024);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int W = 1; W <= 8; ++W) {
    for (std::int64_t n : {1, 2, 7, 300}) {
      std::vector<std::vector<double>> workers(std::size_t(W), std::vector<double>(std::size_t(n), 0.0));
      for (auto& v : workers)
        for (auto& x : v) x = double(Scalar(normal(rng)));
      if (W >= 3)  // ties across workers
        for (std::int64_t j = 0; j < n; j += 3) workers[1][j] = workers[2][j];
      const std::int64_t robust = n > 1 ? n - 1 : n;  // the last one is summed, as the loss is
      INFO("W = " << W << ", n = " << n << ", " << gradsum::space_name<Space>());
      const double tol = RobustTolerance<Scalar>::relative;
      check_close(combine_on<Space, Scalar>(workers, CoordinateMedian{}, robust),
                  robust_reference(workers, Rule::median, 0, 0, std::size_t(robust)), workers, tol);
      for (int k = 0; 2 * k < W; ++k) {  // k = 0 (the sum) up to the largest valid k
        INFO("trimmed k = " << k);
        check_close(combine_on<Space, Scalar>(workers, TrimmedMean{k}, robust),
                    robust_reference(workers, Rule::trimmed, k, 0, std::size_t(robust)), workers,
                    tol);
      }
      // c below every norm, between them, above every norm.
      for (double c : {1e-3, std::sqrt(double(robust)), 1e9}) {
        INFO("clip c = " << c);
        check_close(combine_on<Space, Scalar>(workers, NormClip{c}, robust),
                    robust_reference(workers, Rule::clip, 0, c, std::size_t(robust)), workers, tol);
      }
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("robust rules equal a host reference for W = 1 … 8", Space,
                          rules_reference) {
  check_rules_against_reference<Space, double>();
  check_rules_against_reference<Space, float>();
}
TEST_CASE_TEMPLATE_APPLY(rules_reference, Spaces);

TEST_CASE_TEMPLATE_DEFINE("robust rules: identical workers give the plain sum", Space,
                          identical_workers) {
  // The sum scale: W copies of g aggregate to W g for every rule (NormClip
  // with c above the norm).
  const std::vector<double> g = {0.5, -2.0, 3.25, 7.0};
  for (int W = 1; W <= 5; ++W) {
    const std::vector<std::vector<double>> workers(std::size_t(W), g);
    for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{(W - 1) / 2}),
                            RobustRule(NormClip{100.0})}) {
      const auto out = combine_on<Space, double>(workers, rule, 3);
      for (std::size_t j = 0; j < g.size(); ++j) CHECK(out[j] == doctest::Approx(W * g[j]).epsilon(1e-15));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(identical_workers, Spaces);

TEST_CASE_TEMPLATE_DEFINE("robust rules: a non-finite worker value is not hidden", Space,
                          nonfinite_worker) {
  // The median would drop one NaN; the non-finite guard must see it anyway.
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    std::vector<std::vector<double>> workers = {{1, 2}, {1, 2}, {1, 2}, {bad, 2}};
    for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{1}),
                            RobustRule(NormClip{1.0})}) {
      const auto out = combine_on<Space, double>(workers, rule, 2);
      INFO(rule.name() << " with " << bad);
      CHECK_FALSE(std::isfinite(out[0]));
      if (rule.kind != RobustRule::Kind::norm_clip) CHECK(out[1] == 8.0);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(nonfinite_worker, Spaces);

TEST_CASE("robust rules: invalid knobs are rejected with their values") {
  CHECK(RobustRule(TrimmedMean{1}).check(3).empty());
  CHECK(RobustRule(TrimmedMean{0}).check(1).empty());
  CHECK(RobustRule(TrimmedMean{2}).check(4) ==
        "gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = 4 (the number of workers), got k = 2");
  CHECK(RobustRule(TrimmedMean{-1}).check(4) ==
        "gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = 4 (the number of workers), got k = -1");
  CHECK(RobustRule(NormClip{0.0}).check(4) == "gradsum::NormClip: c must be positive and finite, got 0");
  CHECK(RobustRule(NormClip{-1.0}).check(4) == "gradsum::NormClip: c must be positive and finite, got -1");
  CHECK(RobustRule(NormClip{std::numeric_limits<double>::infinity()}).check(4) ==
        "gradsum::NormClip: c must be positive and finite, got inf");
  CHECK_FALSE(RobustRule(NormClip{std::nan("")}).check(4).empty());
  CHECK(RobustRule(CoordinateMedian{}).check(0) ==
        "gradsum::RobustRule: the number of workers must be at least 1, got 0");
  // The median of two values is their mean, of one the value itself: no
  // protection, so fewer than 3 workers are refused.
  CHECK(RobustRule(CoordinateMedian{}).check(2) ==
        "gradsum::CoordinateMedian: needs at least 3 workers, got W = 2 (the median of two "
        "workers is their mean, so it tolerates no corrupted worker); use 3 or more workers "
        "(MPI ranks, or VirtualWorkers parts of each batch in one process: "
        "gradient/virtual_workers.hpp), or NormClip, which bounds every worker at any W");
  CHECK(RobustRule(CoordinateMedian{}).check(1).rfind(
            "gradsum::CoordinateMedian: needs at least 3 workers, got W = 1 (the median of one "
            "worker is its own gradient, so it tolerates no corrupted worker)", 0) == 0);
  CHECK(RobustRule(CoordinateMedian{}).check(3).empty());
  NormClip per_sample{0.0};
  per_sample.per_sample = true;
  CHECK(RobustRule(per_sample).check(4) ==
        "gradsum::NormClip: c must be positive and finite, got 0");
  CHECK_THROWS_WITH_AS(RobustRule(TrimmedMean{3}).validate(5),
                       "gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = 5 (the number of "
                       "workers), got k = 3",
                       gradsum::Error);
}

namespace {

// The textbook case as a data set: one row per virtual worker, target -1,
// so that at theta = 0 the squared-error gradient of row x is (x, 1).
template <class Space>
gradsum::Dataset<double, typename Space::memory_space> textbook_data() {
  std::vector<double> x, y;
  for (const auto& row : Textbook::rows()) {
    x.insert(x.end(), row.begin(), row.end());
    y.push_back(-1.0);
  }
  return gradsum::Dataset<double, typename Space::memory_space>::from_host(4, 3, x, y);
}

template <class Space>
std::vector<double> textbook_sums(RobustRule rule) {
  const auto data = textbook_data<Space>();
  auto step = gradsum::make_step<double>(Space(), Linear(3), gradsum::SquaredError{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false},
                                         VirtualWorkers<>{rule, 4});
  auto theta = step.make_parameters();
  const auto r = step.evaluate(theta, data);
  CHECK(r.count == 4);
  auto sums = to_host(step.sums());
  sums.resize(4);
  return sums;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("the textbook corrupted worker, four virtual workers", Space, textbook) {
  const auto clean = Textbook::clean();
  const auto bound = Textbook::spread_bound();
  const auto gradients = Textbook::gradients();

  // The plain sum points where the outlier points. The clean aggregate is
  // parallel to the clean workers' sum s = (3, 3, 3, 3), |s| = 6; the
  // outlier b is orthogonal to s except in the bias (s.b = 3) and |b| = 20,
  // so cos(s + b, s) = (|s|^2 + s.b) / (|s| |s + b|) = 39 / (6 sqrt(442)) =
  // 0.309. Any outlier of norm 20 = 10 x the clean norm leaves at most
  // (36 + 6 |b_bias|) / (6 |s + b|): small unless b points along s. An
  // aggregate not dominated by the outlier would be near 1 (the robust
  // ones below exceed 0.99). So: below 1/3.
  const auto plain = textbook_sums<Space>(RobustRule{});
  const double plain_cosine = cosine(plain, clean, 4);
  MESSAGE("plain sum: cosine to the clean aggregate " << plain_cosine);
  CHECK(plain_cosine < 1.0 / 3.0);

  // Median and trimmed mean (k = 1): within W x the clean spread of the
  // clean aggregate, per coordinate (see Textbook::spread_bound).
  for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{1})}) {
    const auto robust = textbook_sums<Space>(rule);
    MESSAGE(rule.name() << ": cosine to the clean aggregate " << cosine(robust, clean, 4));
    for (int j = 0; j < 4; ++j) {
      INFO(rule.name() << ", coordinate " << j << ": " << robust[j] << " vs clean " << clean[j]);
      CHECK(std::fabs(robust[j] - clean[j]) <= bound[j] + 1e-12);
    }
    CHECK(cosine(robust, clean, 4) > 0.99);
    const auto expected = robust_reference(
        gradients, rule.kind == RobustRule::Kind::median ? Rule::median : Rule::trimmed, 1, 0, 4);
    for (int j = 0; j < 4; ++j) CHECK(robust[j] == doctest::Approx(double(expected[j])).epsilon(1e-14));
  }

  // NormClip with c = 2.5, above the clean norms (about 2.005) and below the
  // outlier's 20: the clean workers pass unchanged, so the aggregate minus
  // their sum is the clipped outlier, whose norm is at most c.
  const double c = 2.5;
  const auto clipped = textbook_sums<Space>(NormClip{c});
  long double outlier_part = 0;
  for (int j = 0; j < 4; ++j) {
    const long double d = clipped[j] - (gradients[0][j] + gradients[1][j] + gradients[2][j]);
    outlier_part += d * d;
  }
  MESSAGE("clip:" << c << ": the outlier contributes a vector of norm " << double(std::sqrt(outlier_part))
                  << ", cosine to the clean aggregate " << cosine(clipped, clean, 4));
  CHECK(double(std::sqrt(outlier_part)) <= c * (1 + 1e-12));
  CHECK(double(std::sqrt(outlier_part)) >= c * (1 - 1e-12));
}
TEST_CASE_TEMPLATE_APPLY(textbook, Spaces);

TEST_CASE_TEMPLATE_DEFINE("virtual workers: the step's aggregate is the rule over the parts' sums",
                          Space, virtual_parts) {
  // Parts of 37 rows (uneven: 10, 9, 9, 9 for W = 4; empty parts for W = 8 of
  // 5 rows, which only NormClip takes: a median or trimmed mean would count
  // the empty parts' zeros as votes); each part's gradient by the
  // long-double host reference.
  for (std::int64_t n : {37, 5}) {
    for (int W : {1, 3, 4, 8}) {
      const auto p = random_problem(n, 3, Kind::regression, 1, 11 + std::uint64_t(W));
      const auto theta_h = random_vector(4, 5);
      std::vector<std::vector<double>> parts;
      for (int w = 0; w < W; ++w) {
        const auto rows = gradsum::partition(n, W, w);
        const auto g = reference_sums(p, 1, Kind::regression, theta_h, rows.begin, rows.end);
        parts.emplace_back(g.begin(), g.end());
      }
      const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
      for (int rule = 0; rule < 3; ++rule) {
        if (Rule(rule) == Rule::median && W < 3) continue;  // refused: see the knobs' test
        const RobustRule r = make_rule(Rule(rule), (W - 1) / 2, 0.5);
        auto step = gradsum::make_step<double>(Space(), Linear(3), gradsum::SquaredError{},
                                               gradsum::SGD{}, gradsum::Objective{0.0, false},
                                               VirtualWorkers<>{r, W});
        auto theta = step.make_parameters();
        fill(theta, theta_h);
        INFO("n = " << n << ", W = " << W << ", " << r.name());
        if (n < W && Rule(rule) != Rule::clip) {
          CHECK_THROWS_WITH_AS(step.evaluate(theta, data),
                               doctest::Contains(gradsum::concat(
                                   "over ", W, " workers got a mini-batch of ", n,
                                   " rows on this rank, leaving ", W - n, " workers without rows")
                                                     .c_str()),
                               gradsum::Error);
          continue;
        }
        step.evaluate(theta, data);
        auto got = to_host(step.sums());
        got.resize(5);
        check_close(got, robust_reference(parts, Rule(rule), (W - 1) / 2, 0.5, 4), parts, 1e-13);
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(virtual_parts, Spaces);

TEST_CASE("virtual workers with the Reproducible reduction: the same bits on every backend") {
  // Each part is reduced reproducibly and the parts are combined by one
  // thread per coordinate, so neither the backend nor the thread count
  // (ctest runs this binary with 1 and 2 threads) changes a bit.
  const auto p = random_problem(203, 5, Kind::regression, 1, 77, 1e3);
  const auto theta_h = random_vector(6, 78);
  for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{1}),
                          RobustRule(NormClip{10.0}), RobustRule{}}) {
    std::vector<std::vector<unsigned char>> bits;
    std::vector<std::string> names;
    auto run = [&](auto* tag) {
      using Space = std::remove_pointer_t<decltype(tag)>;
      const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
      auto step = gradsum::make_step<double>(Space(), Linear(5), gradsum::SquaredError{}, gradsum::SGD{},
                                             gradsum::Objective{}, VirtualWorkers<>{rule, 5},
                                             gradsum::Reproducible{});
      auto theta = step.make_parameters();
      fill(theta, theta_h);
      step.evaluate(theta, data);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), step.sums());
      std::vector<unsigned char> b(7 * sizeof(double));
      std::memcpy(b.data(), h.data(), b.size());
      bits.push_back(b);
      names.push_back(gradsum::space_name<Space>());
    };
    std::apply([&](auto... s) { (run(&s), ...); }, Spaces{});
    for (std::size_t i = 1; i < bits.size(); ++i) {
      INFO(rule.name() << ": " << names[i] << " vs " << names[0]);
      CHECK(bits[i] == bits[0]);
    }
  }
}

TEST_CASE("virtual workers: bad knobs fail the step's constructor with their values") {
  using Space = std::tuple_element_t<0, Spaces>;
  auto make = [](VirtualWorkers<> v) {
    return gradsum::make_step<double>(Space(), Linear(2), gradsum::SquaredError{}, gradsum::SGD{},
                                      gradsum::Objective{}, v);
  };
  CHECK_THROWS_WITH_AS(make({TrimmedMean{2}, 4}),
                       "gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = 4 (the number of "
                       "workers), got k = 2",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(make({NormClip{-1.0}, 4}),
                       "gradsum::NormClip: c must be positive and finite, got -1", gradsum::Error);
  CHECK_THROWS_WITH_AS(make({CoordinateMedian{}, 0}),
                       "gradsum::VirtualWorkers: workers must be at least 1, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(make({CoordinateMedian{}, 2}),
                       doctest::Contains("gradsum::CoordinateMedian: needs at least 3 workers, "
                                         "got W = 2 (the median of two workers is their mean"),
                       gradsum::Error);
  CHECK_NOTHROW(make({CoordinateMedian{}, 3}));
}

TEST_CASE_TEMPLATE_DEFINE("per-sample NormClip bounds each part by c times its row count", Space,
                          per_sample_clip) {
  // At theta = 0 the squared-error gradient of row (x, y) of Linear(1) is
  // -y (x, 1). Five rows over two virtual workers: parts of 3 and 2 rows.
  //   part 0: x = 1, 1, 2 with y = -1: sum (4, 3), norm 5, 5/3 per row;
  //   part 1: x = 0.75, 0.75 with y = -4: sum (6, 8), norm 10, 5 per row.
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      5, 1, {1.0, 1.0, 2.0, 0.75, 0.75}, {-1.0, -1.0, -1.0, -4.0, -4.0});
  auto sums_with = [&](NormClip clip) {
    auto step = gradsum::make_step<double>(Space(), Linear(1), gradsum::SquaredError{},
                                           gradsum::SGD{}, gradsum::Objective{0.0, false},
                                           VirtualWorkers<>{clip, 2});
    auto theta = step.make_parameters();
    CHECK(step.evaluate(theta, data).count == 5);
    auto s = to_host(step.sums());
    s.resize(2);
    return s;
  };
  struct Case {
    double c;
    bool per_sample;
    std::vector<double> expected;
  };
  const Case cases[] = {
      // Bounds 6 and 4: part 1 alone is clipped, to (6, 8) 4/10.
      {2.0, true, {4 + 2.4, 3 + 3.2}},
      // Bounds 15 and 10: part 1's norm equals its bound, nothing is
      // clipped (the plain sum).
      {5.0, true, {10.0, 11.0}},
      // Bounds 14.7 and 9.8: part 1 scaled by 0.98.
      {4.9, true, {4 + 6 * 0.98, 3 + 8 * 0.98}},
      // Bounds 3 and 2: both clipped, part 0 by 3/5 and part 1 by 2/10.
      {1.0, true, {4 * 0.6 + 6 * 0.2, 3 * 0.6 + 8 * 0.2}},
      // The default bound c = 2 whatever the row count: both clipped, by
      // 2/5 and 2/10, though part 0's rows are smaller than c per row.
      {2.0, false, {4 * 0.4 + 6 * 0.2, 3 * 0.4 + 8 * 0.2}},
  };
  for (const Case& k : cases) {
    NormClip clip{k.c};
    clip.per_sample = k.per_sample;
    INFO(RobustRule(clip).name());
    const auto got = sums_with(clip);
    for (std::size_t j = 0; j < 2; ++j)
      CHECK(got[j] == doctest::Approx(k.expected[j]).epsilon(1e-14));
  }
}
TEST_CASE_TEMPLATE_APPLY(per_sample_clip, Spaces);
