// SPDX-License-Identifier: Apache-2.0
// The step model for buckets sent during the backward pass against
// schedules worked out by hand (the numbers in the comments), the α-β
// costs of the sum algorithms against their closed forms, and the
// recorder against a real step's layer offsets.

#include "test_helpers.hpp"

#include <gradsum/plan/algorithms.hpp>
#include <gradsum/plan/overlap.hpp>

#include <vector>

using namespace gradsum_test;
using gradsum::Buckets;
using gradsum::SumAlgorithm;
using gradsum::plan::FinalPoint;
using gradsum::plan::Network;
using gradsum::plan::Nodes;
using gradsum::plan::predict_overlap;

namespace {

// 1000 values: the last 500 final at 10 ms, all of them at 20 ms.
const std::vector<FinalPoint> two_halves{{0.01, 500}, {0.02, 0}};

}  // namespace

TEST_CASE("plan: one message starts when the backward pass ends; buckets start when final") {
  const Network fast{1e9, 0};
  // One message of 4000 bytes on 2 workers: 2 * 1/2 * 4000 / 1e9 = 4 us,
  // all of it after the backward pass.
  auto one = predict_overlap(two_halves, 1000, 4, Buckets{}, fast, 2);
  CHECK(one.buckets == 1);
  CHECK(one.early_buckets == 0);
  CHECK(one.backward_end_seconds == 0.02);
  CHECK(one.communication_seconds == doctest::Approx(4e-6).epsilon(1e-12));
  CHECK(one.exposed_seconds == doctest::Approx(4e-6).epsilon(1e-9));
  // Halves: [500, 1000) at 10 ms (done by 10.002 ms), [0, 500) at 20 ms:
  // 2 us exposed.
  auto halves = predict_overlap(two_halves, 1000, 4, Buckets{0, 500}, fast, 2);
  CHECK(halves.buckets == 2);
  CHECK(halves.early_buckets == 1);
  CHECK(halves.exposed_seconds == doctest::Approx(2e-6).epsilon(1e-6));
  // One worker sends nothing.
  CHECK(predict_overlap(two_halves, 1000, 4, Buckets{0, 500}, fast, 1).exposed_seconds == 0.0);
}

TEST_CASE("plan: a bucket waits for the one before it on a slow link") {
  // 1e5 B/s, 1 ms latency, 2 workers: a bucket of b bytes takes
  // b / 1e5 + 2e-3 s. Halves (2000 bytes, 22 ms): [500, 1000) 10-32 ms,
  // [0, 500) ready at 20 ms, starts at 32, ends at 54: 34 ms exposed.
  const Network slow{1e5, 1e-3};
  auto halves = predict_overlap(two_halves, 1000, 4, Buckets{0, 500}, slow, 2);
  CHECK(halves.communication_seconds == doctest::Approx(0.044));
  CHECK(halves.exposed_seconds == doctest::Approx(0.034));
  CHECK(halves.early_buckets == 1);
  // Quarters (12 ms each): 10-22, 22-34, 34-46, 46-58: 38 ms exposed. Two
  // are final (and handed to MPI) before the backward pass ends at 20 ms,
  // though the link takes up the second only at 22 ms.
  auto quarters = predict_overlap(two_halves, 1000, 4, Buckets{0, 250}, slow, 2);
  CHECK(quarters.buckets == 4);
  CHECK(quarters.early_buckets == 2);
  CHECK(quarters.exposed_seconds == doctest::Approx(0.038));
  // One message: 4000 bytes, 42 ms, all exposed. Halves win.
  CHECK(predict_overlap(two_halves, 1000, 4, Buckets{}, slow, 2).exposed_seconds ==
        doctest::Approx(0.042));
  CHECK(gradsum::plan::choose_bucket_size(two_halves, 1000, 4, slow, 2, {0, 250, 500}) == 500);
  // Without latency halves and quarters tie at 30 ms: the larger wins.
  const Network no_latency{1e5, 0};
  CHECK(predict_overlap(two_halves, 1000, 4, Buckets{0, 250}, no_latency, 2).exposed_seconds ==
        doctest::Approx(0.03));
  CHECK(gradsum::plan::choose_bucket_size(two_halves, 1000, 4, no_latency, 2, {250, 500, 0}) == 500);
}

TEST_CASE("plan: the first bucket, the message limit and a bucket across layers") {
  // first 300, then 300: [700, 1000), [400, 700), [100, 400), [0, 100).
  // Final: from 800 at 1 s, from 400 at 2 s, all at 3 s. [700, 1000)
  // needs from <= 700: 2 s; [400, 700) 2 s; the rest 3 s. Two are early.
  const std::vector<FinalPoint> layers{{1, 800}, {2, 400}, {3, 0}};
  const Network instant{1e300, 0};
  auto p = predict_overlap(layers, 1000, 8, Buckets{300, 300}, instant, 4);
  CHECK(p.buckets == 4);
  CHECK(p.early_buckets == 2);
  CHECK(p.exposed_seconds == 0.0);
  // A network reports the whole gradient final twice (its first layer's
  // report, then its own): the backward pass ends at the first, and a
  // bucket final only then is not early.
  const std::vector<FinalPoint> twice{{1, 800}, {2, 400}, {3, 0}, {3.5, 0}};
  auto q = predict_overlap(twice, 1000, 8, Buckets{300, 300}, instant, 4);
  CHECK(q.backward_end_seconds == 3.0);
  CHECK(q.early_buckets == 2);
  // A limit of 128 values caps every bucket (as mpi::message_elements()
  // caps Allreduce's): 1000 values in buckets of 128 from the end, the
  // last of 104: 8.
  CHECK(predict_overlap(layers, 1000, 8, Buckets{300, 300}, instant, 4, 128).buckets == 8);
}

TEST_CASE("plan: even_backward spends the compute's last two thirds in equal layers") {
  // 3 s of compute, 100 values, 4 layers: the backward pass runs from 1 s
  // to 3 s, a layer every 0.5 s, the last 25 values final first.
  const auto p = gradsum::plan::even_backward(3.0, 100, 4);
  REQUIRE(p.size() == 4);
  CHECK(p[0].seconds == doctest::Approx(1.5));
  CHECK(p[0].from == 75);
  CHECK(p[1].seconds == doctest::Approx(2.0));
  CHECK(p[1].from == 50);
  CHECK(p[2].from == 25);
  CHECK(p[3].seconds == doctest::Approx(3.0));
  CHECK(p[3].from == 0);
  CHECK_THROWS_AS(gradsum::plan::even_backward(1.0, 10, 0), gradsum::Error);
}

TEST_CASE("plan: predict_overlap refuses a profile it cannot read") {
  const Network net{1e9, 0};
  CHECK_THROWS_WITH_AS(predict_overlap({{1, 5}}, 10, 4, Buckets{}, net, 2),
                       doctest::Contains("must end with the whole gradient final"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(predict_overlap({{2, 5}, {1, 0}}, 10, 4, Buckets{}, net, 2),
                       doctest::Contains("profile point 1"), gradsum::Error);
  CHECK_THROWS_WITH_AS(predict_overlap({{1, 50}, {2, 0}}, 10, 4, Buckets{}, net, 2),
                       doctest::Contains("from at most 10"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::choose_bucket_size({{1, 0}}, 10, 4, net, 2, {}),
                       doctest::Contains("no candidate"), gradsum::Error);
}

TEST_CASE("plan: ring and recursive doubling against their closed forms") {
  // 1 MB over 4 workers on 1 GB/s, 1 us: ring 2 * 3/4 * 1e6 / 1e9 + 6 us
  // = 1.506 ms; recursive doubling 2 rounds of (1 us + 1 ms) = 2.002 ms, 3
  // rounds on 5 workers = 3.003 ms, none on one.
  const Network net{1e9, 1e-6};
  CHECK(gradsum::plan::reduce_scatter_allgather_seconds(net, 1e6, 4) ==
        doctest::Approx(1.506e-3));
  CHECK(gradsum::plan::ring_allreduce_seconds(net, 1e6, 4) == doctest::Approx(1.506e-3));
  CHECK(gradsum::plan::recursive_doubling_seconds(net, 1e6, 4) == doctest::Approx(2.002e-3));
  CHECK(gradsum::plan::recursive_doubling_seconds(net, 1e6, 5) == doctest::Approx(3.003e-3));
  CHECK(gradsum::plan::recursive_doubling_seconds(net, 1e6, 1) == 0.0);
  CHECK(gradsum::plan::reduce_scatter_allgather_seconds(net, 1e6, 1) == 0.0);
}

TEST_CASE("plan: the two-level sum's phases against their closed forms") {
  const Network net{1e9, 1e-6};
  const Nodes two{2, {1e10, 1e-7}};
  // 1 MB on 4 ranks in 2 nodes of 2: exchange and gather one slice of
  // 500 kB on the node link, 50 us + 0.1 us each; one hop and a one-round
  // broadcast of 500 kB, 1 us + 500 us each: 1.1022 ms.
  const auto s = gradsum::plan::two_level_stages(net, two, 1e6, 4);
  CHECK(s.nodes == 2);
  CHECK(s.ranks_per_node == 2);
  CHECK(s.slices == 2);
  CHECK(s.exchange == doctest::Approx(5.01e-5));
  CHECK(s.gather == doctest::Approx(5.01e-5));
  CHECK(s.hop == doctest::Approx(5.01e-4));
  CHECK(s.broadcast == doctest::Approx(5.01e-4));
  CHECK(gradsum::plan::two_level_seconds(net, two, 1e6, 4) == doctest::Approx(1.1022e-3));
  // One node (4 ranks, 8 per node, or 4 of 4): the flat sum on the node
  // link, 2 * 3/4 * 1e6 / 1e10 + 6 * 0.1 us = 150.6 us.
  const double flat_on_node = gradsum::plan::ring_allreduce_seconds(two.link, 1e6, 4);
  CHECK(flat_on_node == doctest::Approx(1.506e-4));
  CHECK(gradsum::plan::two_level_seconds(net, Nodes{8, two.link}, 1e6, 4) ==
        doctest::Approx(flat_on_node));
  CHECK(gradsum::plan::two_level_seconds(net, Nodes{4, two.link}, 1e6, 4) ==
        doctest::Approx(flat_on_node));
  // One rank per node: 3 hops of 1 MB and a 2-round broadcast, 5 * 1.001 ms.
  const auto chain = gradsum::plan::two_level_stages(net, Nodes{1, two.link}, 1e6, 4);
  CHECK(chain.exchange == 0.0);
  CHECK(chain.seconds() == doctest::Approx(5.005e-3));
  // 5 ranks in nodes of 2: 3 nodes, the last of one rank, so one slice of
  // 1 MB: exchange and gather 100.1 us each, 2 hops and 2 rounds of
  // 1.001 ms: 4.2042 ms.
  const auto odd = gradsum::plan::two_level_stages(net, two, 1e6, 5);
  CHECK(odd.nodes == 3);
  CHECK(odd.slices == 1);
  CHECK(odd.seconds() == doctest::Approx(4.2042e-3));
  CHECK(gradsum::plan::two_level_seconds(net, two, 1e6, 1) == 0.0);
}

TEST_CASE("plan: the sum algorithms refuse what they cannot price") {
  const Network net{1e9, 1e-6};
  CHECK_THROWS_WITH_AS(gradsum::plan::two_level_seconds(net, Nodes{0, {1e10, 0}}, 1, 4),
                       doctest::Contains("ranks_per_node must be in [1, 1000000], got 0"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::two_level_seconds(net, Nodes{2, {0, 0}}, 1, 4),
                       doctest::Contains("link.bandwidth must be positive and finite"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::two_level_seconds(net, Nodes{2, {1e10, -1}}, 1, 4),
                       doctest::Contains("link.latency must be non-negative and finite"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::recursive_doubling_seconds(net, 1, 0),
                       doctest::Contains("recursive_doubling_seconds: workers must be at least "
                                         "1, got 0"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::reduce_scatter_allgather_seconds(net, -1, 4),
                       doctest::Contains("bytes must be non-negative and finite, got -1"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::two_level_stages(net, Nodes{}, 1, -3),
                       doctest::Contains("two_level_stages: workers must be at least 1, got -3"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::plan::recursive_doubling_seconds(Network{0, 0}, 1, 2),
                       doctest::Contains("bandwidth must be positive"), gradsum::Error);
  const std::vector<FinalPoint> done{{1, 0}};
  CHECK_THROWS_WITH_AS(predict_overlap(done, 10, 4, Buckets{}, net, 2, SumAlgorithm::two_level,
                                       Nodes{-1, {1e10, 0}}),
                       doctest::Contains("ranks_per_node"), gradsum::Error);
}

TEST_CASE("plan: two-level buckets pipeline along the chain") {
  // 1000 values of 4 bytes, the last 500 final at 10 ms, all at 10.2 ms;
  // 6 ranks in 3 nodes of 2, 1 MB/s between nodes and 10 MB/s inside, no
  // latency. A half (2000 bytes, slices of 1000): exchange 0.1 ms, hops of
  // 1 ms, broadcast 2 rounds = 2 ms, gather 0.1 ms: 4.2 ms alone.
  const std::vector<FinalPoint> close{{0.01, 500}, {0.0102, 0}};
  const Network net{1e6, 0};
  const Nodes nodes{2, {1e7, 0}};
  // First half: exchange 10-10.1, hops 10.1-11.1 and 11.1-12.1, broadcast
  // 12.1-14.1, gather 14.1-14.2. Second: exchange 10.2-10.3, hop 1 once
  // the first has left it, 11.1-12.1 (while the first takes hop 2), hop 2
  // 12.1-13.1, broadcast after the first's, 14.1-16.1, gather 16.1-16.2:
  // 6 ms past 10.2 (one after the other: 14.2 + 4.2 = 18.4, 8.2 ms).
  auto halves = predict_overlap(close, 1000, 4, Buckets{0, 500}, net, 6, SumAlgorithm::two_level,
                                nodes);
  CHECK(halves.algorithm == SumAlgorithm::two_level);
  CHECK(halves.buckets == 2);
  CHECK(halves.early_buckets == 1);
  CHECK(halves.communication_seconds == doctest::Approx(8.4e-3));
  CHECK(halves.exposed_seconds == doctest::Approx(6e-3));
  // One message of 4000 bytes (slices of 2000): 0.2 + 2 * 2 + 2 * 2 +
  // 0.2 ms = 8.4 ms, all exposed: two_level_seconds alone.
  CHECK(predict_overlap(close, 1000, 4, Buckets{}, net, 6, SumAlgorithm::two_level, nodes)
            .exposed_seconds == doctest::Approx(8.4e-3));
  // Flat: a half takes 2 * 5/6 * 2000 / 1e6 = 3.333 ms, 10-13.333 and
  // 13.333-16.667: 6.467 ms exposed. Two-level exposes less: automatic
  // keeps it.
  auto flat = predict_overlap(close, 1000, 4, Buckets{0, 500}, net, 6, SumAlgorithm::flat, nodes);
  CHECK(flat.algorithm == SumAlgorithm::flat);
  CHECK(flat.exposed_seconds == doctest::Approx(6.4667e-3).epsilon(1e-4));
  CHECK(predict_overlap(close, 1000, 4, Buckets{0, 500}, net, 6).exposed_seconds ==
        doctest::Approx(flat.exposed_seconds));
  auto best = predict_overlap(close, 1000, 4, Buckets{0, 500}, net, 6, SumAlgorithm::automatic,
                              nodes);
  CHECK(best.algorithm == SumAlgorithm::two_level);
  CHECK(best.exposed_seconds == doctest::Approx(6e-3));
}

TEST_CASE("plan: two-level within one node is the flat sum on its link") {
  // 2 ranks, 8 per node: a half of 2000 bytes takes 2 * 1/2 * 2000 / 1e7 =
  // 0.2 ms on the node link: 10-10.2, then 10.2-10.4: 0.2 ms exposed.
  const std::vector<FinalPoint> close{{0.01, 500}, {0.0102, 0}};
  auto p = predict_overlap(close, 1000, 4, Buckets{0, 500}, Network{1e6, 0}, 2,
                           SumAlgorithm::two_level, Nodes{8, {1e7, 0}});
  CHECK(p.exposed_seconds == doctest::Approx(2e-4));
  CHECK(p.communication_seconds == doctest::Approx(4e-4));
  // automatic keeps the flat sum there: one node is not two levels.
  CHECK(predict_overlap(close, 1000, 4, Buckets{0, 500}, Network{1e6, 0}, 2,
                        SumAlgorithm::automatic, Nodes{8, {1e7, 0}})
            .algorithm == SumAlgorithm::flat);
}

TEST_CASE("plan: choose_buckets picks the size and the sum together") {
  const std::vector<FinalPoint> close{{0.01, 500}, {0.0102, 0}};
  const Network net{1e6, 0};
  const Nodes nodes{2, {1e7, 0}};
  // One message: flat 2 * 5/6 * 4000 / 1e6 = 6.667 ms, two-level 8.4 ms;
  // halves: flat 6.467 ms, two-level 6 ms. Halves, two-level.
  auto pick = gradsum::plan::choose_buckets(close, 1000, 4, net, 6, {0, 500},
                                            SumAlgorithm::automatic, nodes);
  CHECK(pick.size == 500);
  CHECK(pick.algorithm == SumAlgorithm::two_level);
  CHECK(pick.prediction.exposed_seconds == doctest::Approx(6e-3));
  auto flat = gradsum::plan::choose_buckets(close, 1000, 4, net, 6, {0, 500}, SumAlgorithm::flat,
                                            nodes);
  CHECK(flat.size == 500);
  CHECK(flat.algorithm == SumAlgorithm::flat);
  // A slow node link (100 kB/s): a two-level half spends 10 ms in each of
  // the exchange and the gather; flat wins, one message at 6.667 ms
  // against halves at 6.467 ms.
  auto slow = gradsum::plan::choose_buckets(close, 1000, 4, net, 6, {500, 0},
                                            SumAlgorithm::automatic, Nodes{2, {1e5, 0}});
  CHECK(slow.size == 500);
  CHECK(slow.algorithm == SumAlgorithm::flat);
  CHECK(slow.prediction.exposed_seconds == doctest::Approx(6.4667e-3).epsilon(1e-4));
  CHECK_THROWS_WITH_AS(gradsum::plan::choose_buckets(close, 1000, 4, net, 6, {},
                                                     SumAlgorithm::automatic, nodes),
                       doctest::Contains("no candidate"), gradsum::Error);
}

TEST_CASE("plan: BackwardRecorder reads when each layer's gradient became final") {
  using Space = Kokkos::DefaultExecutionSpace;
  const std::int64_t n = 40;
  const auto problem = random_problem(n, 6, Kind::multiclass, 4, 11);
  const auto data =
      gradsum::Dataset<double, Space::memory_space>::from_host(n, 6, problem.x, problem.y);
  const gradsum::MLP net(6, {9, 7}, 4, gradsum::Activation::tanh);
  auto step = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                         gradsum::SGD{}, gradsum::Objective{0.0, true},
                                         gradsum::Analytic{}, gradsum::Sum{}, gradsum::Local{});
  auto theta = step.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::he_normal().with_seed(3), theta);
  std::vector<FinalPoint> profile;
  {
    gradsum::plan::BackwardRecorder recorder;
    step.evaluate(theta, data);
    profile = recorder.profile(sizeof(double));
  }
  // Layers of (6 + 1) x 9, (9 + 1) x 7 and (7 + 1) x 4 parameters, in
  // order: final from 63 + 70 after the output layer, from 63 after the
  // hidden one, from 0 at the end.
  REQUIRE(profile.size() == 3);
  CHECK(profile[0].from == 133);
  CHECK(profile[1].from == 63);
  CHECK(profile[2].from == 0);
  CHECK(profile[0].seconds <= profile[1].seconds);
  CHECK(profile[1].seconds <= profile[2].seconds);
  CHECK(profile[2].seconds > 0);
}
