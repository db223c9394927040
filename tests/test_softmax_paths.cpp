// SPDX-License-Identifier: Apache-2.0
// Softmax regression's three ways to the summed gradient (layer-wise
// products, blocks of samples, one sample at a time; the Compensated
// reduction takes the latter two) against the textbook
// gradient written out by hand in long double: widths around the vector
// lanes, blocks that are part full, in-order and shuffled rows.

#include "test_helpers.hpp"

#include <string>
#include <type_traits>

using namespace gradsum_test;

namespace {

template <class Scalar, class Space, class Reduction>
void check_softmax_paths(int d, int classes, std::int64_t n, double tolerance) {
  using Data = gradsum::Dataset<Scalar, typename Space::memory_space>;
  const auto problem = random_problem(n, d, Kind::multiclass, classes, 100 + d * classes + n);
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const auto theta_host = random_vector(std::size_t(classes) * (d + 1), 7 + d, 0.3);
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(n, n > 5 ? n - 3 : n, 5);
  sampler.shuffle(0);
  const auto shuffled = sampler.batch(0);
  // The reference over the shuffled batch: its rows, in any order.
  auto batch_rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shuffled.index);
  struct Path {
    const char* name;
    bool layerwise, batched;
  };
  // The default first: on host spaces the batched path up to
  // Softmax::block_classes classes, the layer-wise one above.
  for (const Path path : {Path{"default", true, true}, Path{"layer-wise", true, false},
                          Path{"blocks of samples", false, true},
                          Path{"one sample at a time", false, false}}) {
    gradsum::Softmax model(d, classes);
    model.layerwise = path.layerwise;
    model.batched = path.batched;
    auto step = gradsum::make_step<Scalar>(Space(), model, gradsum::SoftmaxCrossEntropy{},
                                           gradsum::SGD{}, gradsum::Objective{0.0, false},
                                           gradsum::Analytic{}, Reduction{});
    auto theta = step.make_parameters();
    fill(theta, theta_host);
    const bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                                 typename Space::memory_space>::accessible;
    const bool plain = std::is_same<Reduction, gradsum::Sum>::value;
    const bool expect_layerwise =
        plain && path.layerwise &&
        !(host && path.batched && classes <= gradsum::Softmax::block_classes);
    CHECK(step.layerwise() == expect_layerwise);
    INFO(path.name << ", " << Reduction::name() << ": d = " << d << ", C = " << classes << ", n = " << n);

    step.evaluate(theta, data);
    const auto all = to_host(step.sums());
    const auto expected_all = reference_sums(problem, classes, Kind::multiclass, theta_host, 0, n);
    const std::size_t P = theta_host.size();
    CHECK(relative_distance(all, expected_all, P) <= tolerance);
    CHECK(double(all[P]) == doctest::Approx(double(expected_all[P])).epsilon(tolerance));

    step.evaluate(theta, data, shuffled);
    const auto some = to_host(step.sums());
    std::vector<long double> expected(P + 1, 0.0L);
    for (std::int64_t i = 0; i < shuffled.size(); ++i) {
      const std::int64_t r = batch_rows(shuffled.begin + i);
      const auto one = reference_sums(problem, classes, Kind::multiclass, theta_host, r, r + 1);
      for (std::size_t j = 0; j <= P; ++j) expected[j] += one[j];
    }
    CHECK(relative_distance(some, expected, P) <= tolerance);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("softmax: layer-wise, batched and per-sample paths give the "
                          "textbook gradient",
                          Space, softmax_paths) {
  for (int d : {1, 3, 8, 13, 69})
    for (int classes : {2, 5, 12, gradsum::Softmax::block_classes + 1})
      for (std::int64_t n : {1, 7, 8, 9, 37}) {
        check_softmax_paths<double, Space, gradsum::Sum>(d, classes, n, 1e-12);
        check_softmax_paths<float, Space, gradsum::Sum>(d, classes, n, 2e-5);
        check_softmax_paths<float, Space, gradsum::Compensated>(d, classes, n, 2e-5);
      }
}
TEST_CASE_TEMPLATE_APPLY(softmax_paths, Spaces);
