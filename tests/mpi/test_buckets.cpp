// SPDX-License-Identifier: Apache-2.0
// Allreduce in buckets (mpi/buckets.hpp), under mpiexec with 1 to 4 ranks:
// every element is the sum of the ranks' values in rank order, whatever the
// buckets, checked against that sum made by hand from the ranks' values
// (gathered in one MPI_Allgather); a GPT step sends buckets while its
// backward pass runs and sums to those same bits; a rank that fails leaves
// no rank waiting.

#include "../test_helpers.hpp"
#include "mpi_helpers.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace buckets_test {

// Values whose sums round differently in another order: signs and
// exponents from -30 to 30 drawn per rank and place.
template <class Scalar>
std::vector<Scalar> rank_values(int rank, std::size_t n) {
  std::mt19937_64 draw(std::uint64_t(1000 + rank));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<Scalar> x(n);
  for (auto& v : x) v = Scalar(std::ldexp(unit(draw), exponent(draw)));
  return x;
}

// ((x_0 + x_1) + x_2) + … of every rank's values, from one MPI_Allgather.
template <class Scalar>
std::vector<Scalar> rank_order_sum(const std::vector<Scalar>& mine) {
  const int p = mpi_size();
  const std::size_t n = mine.size();
  std::vector<Scalar> all(n * std::size_t(p));
  REQUIRE(MPI_Allgather(mine.data(), int(n), gradsum::mpi::datatype<Scalar>(), all.data(), int(n),
                        gradsum::mpi::datatype<Scalar>(), MPI_COMM_WORLD) == MPI_SUCCESS);
  std::vector<Scalar> sum(n);
  for (std::size_t i = 0; i < n; ++i) {
    Scalar s = all[i];
    for (int r = 1; r < p; ++r) s += all[std::size_t(r) * n + i];
    sum[i] = s;
  }
  return sum;
}

template <class Scalar, class Space>
void check_buckets(const gradsum::Buckets& buckets, std::size_t n,
                   const gradsum::SumLayout& layout = {}) {
  using Memory = typename Space::memory_space;
  const auto mine = rank_values<Scalar>(mpi_rank(), n);
  const auto expected = rank_order_sum(mine);
  gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, buckets, layout);
  sum.allocate<Scalar, Memory>(n);
  Kokkos::View<Scalar*, Memory> x("buckets_test::x", n);
  auto host = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < n; ++i) host(i) = mine[i];
  Kokkos::deep_copy(x, host);
  sum.aggregate(Space(), x);
  Kokkos::deep_copy(host, x);
  INFO("n " << n << ", buckets " << buckets.first << " then " << buckets.size << ", "
            << gradsum::name(layout.algorithm) << " on nodes of " << layout.ranks_per_node);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) differ += host(i) == expected[i] ? 0 : 1;
  CHECK(differ == 0);
  if (mpi_size() == 2) {  // x_0 + x_1 = x_1 + x_0: MPI_Allreduce's bits too
    std::vector<Scalar> plain = mine;
    REQUIRE(MPI_Allreduce(MPI_IN_PLACE, plain.data(), int(n), gradsum::mpi::datatype<Scalar>(),
                          MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(plain == expected);
  }
}

// Whether the host reads Space's memory (buckets leave during the backward
// pass only then).
template <class Space>
constexpr bool host_memory =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;

// How many of the buckets of n values (cut from the end down: `first`,
// then `size` each, none over message_elements()) begin at or after `from`.
std::int64_t buckets_from(std::size_t n, const gradsum::Buckets& b, std::size_t from) {
  std::int64_t count = 0;
  for (std::size_t end = n; end > 0;) {
    const std::size_t want = end == n && b.first > 0 ? b.first : b.size;
    const std::size_t size = std::min(want, std::size_t(gradsum::mpi::message_elements()));
    const std::size_t begin = end > size ? end - size : 0;
    count += begin >= from ? 1 : 0;
    end = begin;
  }
  return count;
}

TEST_CASE_TEMPLATE_DEFINE("Allreduce in buckets adds each element in rank order, whatever the "
                          "buckets", Space, buckets_sums) {
  for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000)})
    for (const gradsum::Buckets b : {gradsum::Buckets{0, 1}, gradsum::Buckets{3, 5},
                                     gradsum::Buckets{0, 7}, gradsum::Buckets{100, 1000000}}) {
      check_buckets<double, Space>(b, n);
      check_buckets<float, Space>(b, n);
    }
}
TEST_CASE_TEMPLATE_APPLY(buckets_sums, Spaces);

// Nodes of k consecutive ranks (the last one holding what is left).
int nodes_of(int k) { return (mpi_size() + k - 1) / k; }

TEST_CASE_TEMPLATE_DEFINE("two-level sums add each element in rank order: the flat sum's bits on "
                          "nodes of 1, 2 and 3 ranks", Space, two_level_sums) {
  for (const int k : {1, 2, 3}) {
    const gradsum::SumLayout layout{gradsum::SumAlgorithm::two_level, k};
    for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000)})
      for (const gradsum::Buckets b : {gradsum::Buckets{0, 1}, gradsum::Buckets{3, 5},
                                       gradsum::Buckets{100, 1000000}, gradsum::Buckets{}}) {
        check_buckets<double, Space>(b, n, layout);
        check_buckets<float, Space>(b, n, layout);
      }
    gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, {}, layout);
    CHECK(sum.nodes() == nodes_of(k));
    CHECK(sum.sum_algorithm() == (nodes_of(k) > 1 ? gradsum::SumAlgorithm::two_level
                                                  : gradsum::SumAlgorithm::flat));
  }
}
TEST_CASE_TEMPLATE_APPLY(two_level_sums, Spaces);

TEST_CASE("the automatic sum is two-level where nodes hold several ranks and there are several "
          "nodes; the same bits") {
  for (const int k : {0, 1, 2, 3}) {
    INFO("ranks per node " << k);
    const gradsum::SumLayout layout{gradsum::SumAlgorithm::automatic, k};
    check_buckets<double, Kokkos::DefaultHostExecutionSpace>(gradsum::Buckets{0, 7}, 100, layout);
    gradsum::Allreduce sum(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                           gradsum::Buckets{0, 7}, layout);
    // Every rank of this machine shares its memory: one node when k is 0.
    const int nodes = k == 0 ? 1 : nodes_of(k);
    const bool two_level = nodes > 1 && nodes < mpi_size();
    CHECK(sum.nodes() == (two_level ? nodes : 1));
    CHECK(sum.sum_algorithm() ==
          (two_level ? gradsum::SumAlgorithm::two_level : gradsum::SumAlgorithm::flat));
  }
}

TEST_CASE("ranks that disagree on the sum's algorithm, nodes or buckets all throw before any "
          "other collective") {
  if (mpi_size() == 1) return;
  const bool last = mpi_rank() == mpi_size() - 1;
  using gradsum::SumAlgorithm;
  const auto make = [](gradsum::Buckets b, gradsum::SumLayout layout) {
    gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, b, layout);
  };
  CHECK_THROWS_WITH_AS(
      make({0, 8}, {last ? SumAlgorithm::two_level : SumAlgorithm::flat, 0}),
      doctest::Contains("ranks disagree on how to sum (the sum algorithm (0 automatic, 1 flat, "
                        "2 two-level) ranges from 1 to 2)"),
      gradsum::AgreedError);
  CHECK_THROWS_WITH_AS(make({0, 8}, {SumAlgorithm::two_level, last ? 2 : 1}),
                       doctest::Contains("(the ranks per node ranges from 1 to 2)"),
                       gradsum::AgreedError);
  CHECK_THROWS_WITH_AS(make({0, last ? std::size_t(8) : 0}, {}),
                       doctest::Contains("disagree on how to sum (whether the sum is cut into buckets"),
                       gradsum::AgreedError);
  CHECK_THROWS_WITH_AS(make({0, 8}, {SumAlgorithm::two_level, -1}),
                       doctest::Contains("-1 ranks per node; expected 0"), gradsum::AgreedError);
  // Every rank still answers: a plain sum after the refusals.
  check_buckets<double, Kokkos::DefaultHostExecutionSpace>(gradsum::Buckets{0, 3}, 10);
}

TEST_CASE("nodes are found from each rank's node's lowest rank; nodes whose ranks interleave are "
          "not consecutive") {
  const auto two = gradsum::mpi::detail::map_nodes({0, 0, 2, 2, 2});
  CHECK(two.consecutive);
  CHECK(two.first == std::vector<int>{0, 2, 5});
  CHECK(two.nodes() == 2);
  CHECK(two.fewest() == 2);
  CHECK(two.node_of(0) == 0);
  CHECK(two.node_of(1) == 0);
  CHECK(two.node_of(4) == 1);
  const auto mixed = gradsum::mpi::detail::map_nodes({0, 1, 0, 1});
  CHECK_FALSE(mixed.consecutive);
  CHECK(mixed.why == "ranks 0 and 2 share a node that rank 1 is not on");
  CHECK(gradsum::mpi::detail::map_nodes({0}).nodes() == 1);
}

TEST_CASE("Allreduce refuses a first bucket without a bucket size") {
  CHECK_THROWS_WITH_AS(
      gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, gradsum::Buckets{5, 0}),
      doctest::Contains("a first bucket of 5 values but a bucket size of 0"), gradsum::Error);
}

TEST_CASE("ranks that cut the sum into different buckets are refused before the first "
          "collective") {
  if (mpi_size() == 1) return;
  const std::size_t size = mpi_rank() == mpi_size() - 1 ? 64 : 32;
  const gradsum::Linear model(3);
  CHECK_THROWS_WITH_AS(
      gradsum::make_step<double>(
          Kokkos::DefaultExecutionSpace(), model, gradsum::SquaredError{}, gradsum::SGD{},
          gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
          gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                             gradsum::Buckets{0, size})),
      doctest::Contains("allreduce bucket size ranges from 32 to 64"), gradsum::AgreedError);
}

const char* const text =
    "And God said, Let the waters under the heaven be gathered together unto one place, and "
    "let the dry land appear: and it was so. And God called the dry land Earth.";

struct Gpt {
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  gradsum::CharVocabulary vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  int context = 6;
  gradsum::TextWindows<Memory> windows{vocabulary.encode(text, "text"), context, "text"};
  gradsum::GptShape shape{vocabulary.size(), context, 3, 2, 8};
  Kokkos::View<std::int64_t*, Memory> index{"mine", 64};

  // This rank's contiguous share of the windows at stride context.
  auto mine() {
    const auto offsets = windows.full_batch_offsets(0, windows.num_windows());
    const std::size_t n = offsets.size(), p = std::size_t(mpi_size()), r = std::size_t(mpi_rank());
    return windows.select(std::vector<std::int64_t>(offsets.begin() + std::ptrdiff_t(n * r / p),
                                                    offsets.begin() + std::ptrdiff_t(n * (r + 1) / p)),
                          index);
  }
  template <class Aggregation>
  auto step(const Aggregation& aggregation) {
    return gradsum::make_step<double>(Space(), gradsum::make_gpt(shape),
                                      gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{},
                                      gradsum::Objective{0.0, true}, gradsum::Analytic{},
                                      gradsum::Sum{}, aggregation);
  }
};

TEST_CASE("mpi: a GPT step sends its gradient in buckets while the backward pass runs, to the "
          "bits of the rank-order sum") {
  Gpt g;
  const auto data = g.windows.dataset<double>();
  const auto rows = g.mine();
  const auto start = gradsum::gpt_initial_parameters(g.shape, 9);

  // This rank's own sums (a single-process step over its windows, its
  // rows in as many parts as the aggregated step), then every rank's added
  // in rank order by hand.
  auto alone = g.step(gradsum::Local{});
  auto theta = alone.make_parameters();
  fill(theta, start);
  const std::size_t P = std::size_t(alone.num_parameters());
  auto expected_sums = [&](int parts) {
    alone.measure_workers(parts);
    alone.evaluate(theta, data, rows);
    const auto own = to_host(alone.sums());
    return rank_order_sum(std::vector<double>(own.begin(), own.begin() + std::ptrdiff_t(P + 1)));
  };

  // Buckets wholly past the token embedding (wte, the first V * C
  // parameters, the last layer whose backward runs) leave before it.
  const std::size_t embeddings = std::size_t(g.shape.vocabulary) * std::size_t(g.shape.width);
  auto buckets_past = [&](const gradsum::Buckets& b) { return buckets_from(P, b, embeddings); };
  // The step's sums against the rank-order sum, and the buckets that left
  // early against those past the token embedding (none when the workers
  // are measured, or when `early` is false).
  auto check = [&](auto& step, const gradsum::Buckets& b, bool early) {
    for (const int parts : {0, 2}) {
      INFO("worker parts " << parts);
      const auto expected = expected_sums(parts);
      step.measure_workers(parts);
      const auto before = step.aggregation().early_buckets();
      step.evaluate(theta, data, rows);
      const auto got = to_host(step.sums());
      std::size_t differ = 0;
      for (std::size_t j = 0; j <= P; ++j) differ += got[j] == expected[j] ? 0 : 1;
      CHECK(differ == 0);
      const bool overlapped = early && mpi_size() > 1 && parts == 0 && host_memory<Gpt::Space>;
      CHECK(step.aggregation().early_buckets() - before == (overlapped ? buckets_past(b) : 0));
    }
  };

  SUBCASE("Allreduce") {
    for (const gradsum::Buckets b : {gradsum::Buckets{40, 300}, gradsum::Buckets{0, 1000000}}) {
      INFO("buckets " << b.first << " then " << b.size);
      if (b.size < P && mpi_size() > 1) CHECK(buckets_past(b) > 2);
      auto step = g.step(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, b));
      check(step, b, true);
    }
  }
  SUBCASE("Allreduce, two-level on nodes of 2 ranks") {
    const gradsum::Buckets b{40, 300};
    auto step = g.step(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, b,
                                          {gradsum::SumAlgorithm::two_level, 2}));
    check(step, b, true);
  }
  SUBCASE("RobustAllreduce: the sum in buckets, a robust rule in one message") {
    const gradsum::Buckets b{40, 300};
    auto sum = g.step(gradsum::RobustAllreduce(MPI_COMM_WORLD, gradsum::RobustRule{},
                                               gradsum::DeviceBuffers::automatic, b));
    check(sum, b, true);
    if (mpi_size() >= 3) {
      auto median = g.step(gradsum::RobustAllreduce(MPI_COMM_WORLD, gradsum::CoordinateMedian{},
                                                    gradsum::DeviceBuffers::automatic, b));
      median.evaluate(theta, data, rows);
      CHECK(median.aggregation().early_buckets() == 0);
    }
  }
}

TEST_CASE("mpi: an MLP step on the layer-wise path sends its buckets during the backward pass") {
  using Space = Kokkos::DefaultExecutionSpace;
  const std::int64_t n = 53;
  const auto problem = random_problem(n, 6, Kind::multiclass, 4, 77);
  const auto data =
      gradsum::Dataset<double, Space::memory_space>::from_host(n, 6, problem.x, problem.y);
  const gradsum::MLP net(6, {9, 7}, 4, gradsum::Activation::tanh);
  const auto rows = gradsum::partition(n, mpi_size(), mpi_rank());
  auto make = [&](const auto& aggregation) {
    return gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{},
                                      gradsum::Objective{0.0, true}, gradsum::Analytic{},
                                      gradsum::Sum{}, aggregation);
  };
  auto alone = make(gradsum::Local{});
  auto theta = alone.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::he_normal().with_seed(3), theta);
  alone.evaluate(theta, data, rows);
  const auto own = to_host(alone.sums());
  const std::size_t P = std::size_t(alone.num_parameters());
  const auto expected =
      rank_order_sum(std::vector<double>(own.begin(), own.begin() + std::ptrdiff_t(P + 1)));

  const gradsum::Buckets b{0, 10};
  auto step = make(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic, b));
  step.evaluate(theta, data, rows);
  const auto got = to_host(step.sums());
  std::size_t differ = 0;
  for (std::size_t j = 0; j <= P; ++j) differ += got[j] == expected[j] ? 0 : 1;
  CHECK(differ == 0);
  // The first layer's (6 + 1) x 9 parameters come first; the buckets wholly
  // after them leave before its backward.
  const std::size_t first_layer = 7 * 9;
  CHECK(step.aggregation().early_buckets() ==
        (mpi_size() > 1 && host_memory<Space> ? buckets_from(P, b, first_layer) : 0));
}

TEST_CASE("mpi: a non-finite gradient on one rank, its buckets sent early: every rank throws or "
          "skips") {
  Gpt g;
  const auto data = g.windows.dataset<double>();
  const auto rows = g.mine();
  const int last = mpi_size() - 1;
  auto start = gradsum::gpt_initial_parameters(g.shape, 9);
  if (mpi_rank() == last) start.back() = std::nan("");  // lnf's last bias: every output
  for (const auto action : {gradsum::NonFinite::throw_error, gradsum::NonFinite::skip}) {
    INFO("skip " << (action == gradsum::NonFinite::skip));
    auto step = gradsum::make_step<double>(
        Gpt::Space(), gradsum::make_gpt(g.shape), gradsum::SoftmaxCrossEntropy{},
        gradsum::SGD{0.1}, gradsum::Objective{0.0, true, action}, gradsum::Analytic{},
        gradsum::Sum{},
        gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                           gradsum::Buckets{40, 300}));
    auto theta = step.make_parameters();
    fill(theta, start);
    if (action == gradsum::NonFinite::throw_error) {
      const std::string expected = "rank " + std::to_string(last) + ": ";
      CHECK_THROWS_WITH_AS(step(theta, data, rows), doctest::Contains(expected.c_str()),
                           gradsum::Error);
    } else {
      CHECK(step(theta, data, rows).skipped);
      const auto after = to_host(theta);
      std::size_t moved = 0;
      for (std::size_t j = 0; j + 1 < start.size(); ++j) moved += after[j] == start[j] ? 0 : 1;
      CHECK(moved == 0);
    }
  }
}

// The first selected row, and the first token of row r, read on the host.
template <class Rows>
std::int64_t rows_first(const Rows& rows) {
  std::int64_t first = 0;
  Kokkos::parallel_reduce(
      Kokkos::RangePolicy<Gpt::Space>(0, 1),
      KOKKOS_LAMBDA(int, std::int64_t& f) { f = rows(0); }, first);
  return first;
}
template <class X>
double first_token(const X& x, std::int64_t r) {
  double token = 0;
  Kokkos::parallel_reduce(
      Kokkos::RangePolicy<Gpt::Space>(0, 1), KOKKOS_LAMBDA(int, double& t) { t = x(r, 0); },
      token);
  return token;
}
template <class X>
void set_first_token(const X& x, std::int64_t r, double id) {
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Gpt::Space>(0, 1), KOKKOS_LAMBDA(int) { x(r, 0) = id; });
  Kokkos::fence();
}

TEST_CASE("mpi: a rank whose windows hold a bad token fails every rank alike, buckets pending") {
  Gpt g;
  auto data = g.windows.dataset<double>();
  const auto rows = g.mine();
  auto step = g.step(gradsum::Allreduce(MPI_COMM_WORLD, gradsum::DeviceBuffers::automatic,
                                        gradsum::Buckets{40, 300}));
  auto theta = step.make_parameters();
  fill(theta, gradsum::gpt_initial_parameters(g.shape, 9));
  const int last = mpi_size() - 1;
  const auto x = data.features();
  const std::int64_t first_row = rows_first(rows);
  // The first token of this rank's first window, past the vocabulary on the last rank.
  const double good = first_token(x, first_row);
  if (mpi_rank() == last) set_first_token(x, first_row, double(g.vocabulary.size() + 3));
  const std::string expected = "rank " + std::to_string(last) + ": ";
  CHECK_THROWS_WITH_AS(step.evaluate(theta, data, rows), doctest::Contains(expected.c_str()),
                       gradsum::Error);
  // The next step on good data goes through: nothing was left pending.
  if (mpi_rank() == last) set_first_token(x, first_row, good);
  CHECK_NOTHROW(step.evaluate(theta, data, rows));
}

}  // namespace buckets_test
