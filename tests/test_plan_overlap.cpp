// SPDX-License-Identifier: Apache-2.0
// The step model for buckets sent during the backward pass against
// schedules worked out by hand (the numbers in the comments), and the
// recorder against a real step's layer offsets.

#include "test_helpers.hpp"

#include <gradsum/plan/overlap.hpp>

#include <vector>

using namespace gradsum_test;
using gradsum::Buckets;
using gradsum::plan::FinalPoint;
using gradsum::plan::Network;
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
