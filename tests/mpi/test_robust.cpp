// SPDX-License-Identifier: Apache-2.0
// Robust aggregation across MPI ranks (RobustAllreduce): run by ctest under
// mpiexec with 1, 2, 3 and 4 ranks. Expected values come from the host
// reference written from the rules' definitions; every rank must hold the
// same bits, and the same bits as the in-process combination of the same
// worker vectors.

#include "../robust_reference.hpp"
#include "../test_helpers.hpp"

#include <mpi.h>

#include <cstring>

using namespace gradsum_test;
using gradsum::CoordinateMedian;
using gradsum::Linear;
using gradsum::NormClip;
using gradsum::RobustAllreduce;
using gradsum::RobustRule;
using gradsum::TrimmedMean;

namespace {

int rank_of_world() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size_of_world() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Whether every rank holds the same bytes as rank 0.
bool same_on_every_rank(const std::vector<double>& values) {
  std::vector<double> root = values;
  MPI_Bcast(root.data(), int(root.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int same = std::memcmp(root.data(), values.data(), values.size() * sizeof(double)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return same != 0;
}

Rule rule_of(const RobustRule& r) {
  return r.kind == RobustRule::Kind::median ? Rule::median
         : r.kind == RobustRule::Kind::trimmed_mean ? Rule::trimmed
                                                    : Rule::clip;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("robust allreduce: the rule over the ranks' vectors, same bits everywhere",
                          Space, robust_vectors) {
  // Every rank can draw every rank's vector from the seed, so the reference
  // and the in-process combination are computed locally.
  using Memory = typename Space::memory_space;
  const int W = size_of_world(), me = rank_of_world();
  const std::int64_t n = 41, robust = 37;  // the last 4 entries are summed, as loss and counts
  std::mt19937_64 rng(314);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> workers(std::size_t(W), std::vector<double>(std::size_t(n), 0.0));
  for (auto& v : workers)
    for (auto& x : v) x = normal(rng);
  for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{(W - 1) / 2}),
                          RobustRule(NormClip{3.0})}) {
    INFO(rule.name() << " over " << W << " ranks");
    RobustAllreduce aggregation(MPI_COMM_WORLD, rule);
    aggregation.allocate<double, Memory>(std::size_t(n));
    Kokkos::View<double*, Memory> buffer("buffer", std::size_t(n));
    fill(buffer, workers[std::size_t(me)]);
    aggregation.aggregate(Space(), buffer, robust);
    const auto got = to_host(buffer);
    const auto expected = robust_reference(workers, rule_of(rule), rule.k, rule.c, std::size_t(robust));
    for (std::int64_t j = 0; j < n; ++j)
      CHECK(got[j] == doctest::Approx(double(expected[j])).epsilon(1e-13));
    CHECK(same_on_every_rank(got));

    // The same kernel in one process over the same vectors: the same bits.
    Kokkos::View<double*, Memory> values("values", std::size_t(W * n)), factors("factors", W),
        out("out", std::size_t(n));
    std::vector<double> flat;
    for (const auto& v : workers) flat.insert(flat.end(), v.begin(), v.end());
    fill(values, flat);
    gradsum::detail::robust_combine(Space(), rule, W, robust, n, values, factors, out);
    Space().fence();
    CHECK(to_host(out) == got);
  }
}
TEST_CASE_TEMPLATE_APPLY(robust_vectors, Spaces);

TEST_CASE_TEMPLATE_DEFINE("robust allreduce: the textbook corrupted worker on four ranks", Space,
                          textbook_ranks) {
  if (size_of_world() != 4) {
    MESSAGE("the textbook case needs exactly 4 ranks (it has four workers); skipped at "
            << size_of_world());
    return;
  }
  // Rank w holds the w-th textbook row, target -1: at theta = 0 its
  // squared-error gradient is (x, 1) (see Textbook in robust_reference.hpp).
  const auto row = Textbook::rows()[std::size_t(rank_of_world())];
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(1, 3, row, {-1.0});
  const auto clean = Textbook::clean();
  const auto bound = Textbook::spread_bound();
  auto sums_with = [&](RobustRule rule) {
    auto step = gradsum::make_step<double>(Space(), Linear(3), gradsum::SquaredError{}, gradsum::SGD{},
                                           gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                           gradsum::Sum{}, RobustAllreduce(MPI_COMM_WORLD, rule));
    auto theta = step.make_parameters();
    CHECK(step.evaluate(theta, data).count == 4);
    auto s = to_host(step.sums());
    CHECK(same_on_every_rank(s));
    s.resize(4);
    return s;
  };
  // The bound 1/3 on the plain sum's cosine is justified in test_robust.cpp.
  const auto plain = sums_with(RobustRule{});
  MESSAGE("4 ranks, plain sum: cosine to the clean aggregate " << cosine(plain, clean, 4));
  CHECK(cosine(plain, clean, 4) < 1.0 / 3.0);
  for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(TrimmedMean{1})}) {
    const auto robust = sums_with(rule);
    MESSAGE("4 ranks, " << rule.name() << ": cosine to the clean aggregate " << cosine(robust, clean, 4));
    for (int j = 0; j < 4; ++j) CHECK(std::fabs(robust[j] - clean[j]) <= bound[j] + 1e-12);
  }
  const double c = 2.5;
  const auto clipped = sums_with(NormClip{c});
  const auto g = Textbook::gradients();
  long double outlier = 0;
  for (int j = 0; j < 4; ++j) {
    const long double d = clipped[j] - (g[0][j] + g[1][j] + g[2][j]);
    outlier += d * d;
  }
  MESSAGE("4 ranks, clip:" << c << ": the outlier contributes norm " << double(std::sqrt(outlier)));
  CHECK(double(std::sqrt(outlier)) <= c * (1 + 1e-12));
}
TEST_CASE_TEMPLATE_APPLY(textbook_ranks, Spaces);

TEST_CASE_TEMPLATE_DEFINE("robust allreduce: 20 training steps end on the same bits on every rank",
                          Space, robust_training) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(60, 3, Kind::binary, 1, 21);
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  for (RobustRule rule : {RobustRule(CoordinateMedian{}), RobustRule(NormClip{0.5})}) {
    // The median of one or two ranks is refused (see the knobs' test below).
    if (rule.kind == RobustRule::Kind::median && size_of_world() < 3) continue;
    auto step = gradsum::make_step<double>(Space(), Linear(3), gradsum::BinaryCrossEntropy{},
                                           gradsum::SGD{0.5}, gradsum::Objective{},
                                           gradsum::Analytic{}, gradsum::Reproducible{},
                                           RobustAllreduce(MPI_COMM_WORLD, rule));
    auto theta = step.make_parameters();
    gradsum::MiniBatchSampler<Memory> sampler(p.n, 12, 5);
    int steps = 0;
    for (std::int64_t epoch = 0; steps < 20; ++epoch) {
      sampler.shuffle(epoch);
      for (std::int64_t b = 0; b < sampler.num_batches() && steps < 20; ++b, ++steps)
        step(theta, data, sampler.batch(b, size_of_world(), rank_of_world()));
    }
    INFO(rule.name() << ", " << size_of_world() << " ranks");
    const auto t = to_host(theta);
    CHECK(std::isfinite(t[0]));
    CHECK(same_on_every_rank(t));
  }
}
TEST_CASE_TEMPLATE_APPLY(robust_training, Spaces);

TEST_CASE("robust allreduce: a bad or differing knob fails every rank alike") {
  using Space = std::tuple_element_t<0, Spaces>;
  const int W = size_of_world();
  auto make = [](RobustRule rule) {
    return gradsum::make_step<double>(Space(), Linear(2), gradsum::SquaredError{}, gradsum::SGD{},
                                      gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                      RobustAllreduce(MPI_COMM_WORLD, rule));
  };
  // k = W/2 + ... is never valid for W ranks: 2k >= W.
  const int k = (W + 1) / 2;
  const std::string expected = "rank 0: gradsum::TrimmedMean: k must satisfy 0 <= 2k < W = " +
                               std::to_string(W) + " (the number of workers), got k = " +
                               std::to_string(k);
  CHECK_THROWS_WITH_AS(make(TrimmedMean{k}), expected.c_str(), gradsum::Error);
  CHECK_THROWS_WITH_AS(make(NormClip{-1.0}),
                       "rank 0: gradsum::NormClip: c must be positive and finite, got -1",
                       gradsum::Error);
  // The median needs 3 ranks: below, every rank refuses alike.
  if (W < 3) {
    const std::string median = "rank 0: gradsum::CoordinateMedian: needs at least 3 workers, "
                               "got W = " + std::to_string(W);
    CHECK_THROWS_WITH_AS(make(CoordinateMedian{}), doctest::Contains(median.c_str()),
                         gradsum::Error);
  } else {
    CHECK_NOTHROW(make(CoordinateMedian{}));
  }
  if (W > 1) {
    NormClip a{1.0}, b{1.0};
    b.per_sample = true;
    // Rank 1 asks for a bound per sample, the others for one per rank.
    CHECK_THROWS_WITH_AS(make(rank_of_world() == 1 ? b : a),
                         doctest::Contains("robust rule per sample ranges from"), gradsum::Error);
    // Rank 1 asks for another clip level: the signature check names it.
    CHECK_THROWS_WITH_AS(make(NormClip{rank_of_world() == 1 ? 2.0 : 1.0}),
                         doctest::Contains("robust rule c ranges from"), gradsum::Error);
  }
}

TEST_CASE_TEMPLATE_DEFINE("robust allreduce: per-sample NormClip bounds each rank by c times its "
                          "shard's size", Space, per_sample_ranks) {
  // Rank r holds a shard of r + 1 rows (x = 0.75, y = -4 s_r), whose
  // squared-error gradient at theta = 0 is s_r (3, 4) per row: norm 5 s_r n_r
  // for n_r = r + 1 rows, with s_r = 1 on even ranks and 2 on odd ones.
  // With c = 7 per sample, the even ranks (5 per row) are kept and the odd
  // ones (10 per row) are clipped to 7 n_r, whatever their shard's size.
  const int W = size_of_world(), me = rank_of_world();
  auto scale = [](int r) { return r % 2 ? 2.0 : 1.0; };
  const std::int64_t n = me + 1;
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      n, 1, std::vector<double>(std::size_t(n), 0.75),
      std::vector<double>(std::size_t(n), -4.0 * scale(me)));
  NormClip clip{7.0};
  clip.per_sample = true;
  auto step = gradsum::make_step<double>(Space(), Linear(1), gradsum::SquaredError{},
                                         gradsum::SGD{}, gradsum::Objective{0.0, false},
                                         gradsum::Analytic{}, gradsum::Sum{},
                                         RobustAllreduce(MPI_COMM_WORLD, clip));
  auto theta = step.make_parameters();
  CHECK(step.evaluate(theta, data).count == std::int64_t(W) * (W + 1) / 2);
  // By hand: sum over ranks of (3, 4) n_r, times 7/5 on odd ranks.
  double expected_w = 0, expected_b = 0;
  for (int r = 0; r < W; ++r) {
    const double kept = r % 2 ? 7.0 / 5.0 : 1.0;
    expected_w += 3 * (r + 1) * kept;
    expected_b += 4 * (r + 1) * kept;
  }
  const auto s = to_host(step.sums());
  INFO(W << " ranks");
  CHECK(s[0] == doctest::Approx(expected_w).epsilon(1e-14));
  CHECK(s[1] == doctest::Approx(expected_b).epsilon(1e-14));
  CHECK(same_on_every_rank(s));
}
TEST_CASE_TEMPLATE_APPLY(per_sample_ranks, Spaces);
