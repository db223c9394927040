// SPDX-License-Identifier: Apache-2.0
// The layer-wise path (matrix products over panels of rows) gives the
// per-sample path's gradient and loss: MLPs of every depth from 1 to 3,
// every activation and head, and Softmax, in float and double; full
// batches, batches of one, odd sizes, several panels with a last one part
// full, shuffled mini-batches. A network beyond the per-sample limits
// (784-1024-1024-10) trains layer-wise, and its gradient agrees with
// central differences of its own objective.

#include "test_helpers.hpp"

#include <gradsum/gradsum.hpp>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

using namespace gradsum_test;
using gradsum::Activation;
using gradsum::MLP;
using gradsum::RowRange;

namespace {

// The summed gradient and loss (P + 1 values) of `model` at `theta` over
// `rows`, through Analytic::sum with a workspace of `panel_rows` rows of
// the layer-wise path (0: the per-sample path).
template <class Scalar, class Space, class Model, class Loss, class Theta, class Rows>
std::vector<double> sums(const Model& model, const Loss& loss, const Theta& theta,
                         const DataOn<Space, Scalar>& data, const Rows& rows, std::int64_t panel_rows) {
  using View = Kokkos::View<Scalar*, typename Space::memory_space>;
  const int P = model.num_parameters();
  View out("out", std::size_t(P) + 1);
  std::size_t room = 0;
  Model m = model;
  m.layerwise = panel_rows > 0;
  if constexpr (std::is_same<Model, gradsum::Softmax>::value)
    m.batched = false;  // (on host spaces: not its batched path)
  if (panel_rows > 0)
    room = std::size_t(panel_rows) * gradsum::detail::layerwise_row_scalars(m.dense_layers()) +
           gradsum::detail::layerwise_fixed_scalars;
  View work("work", room);
  gradsum::Analytic{}.sum(Space(), m, loss, gradsum::Sum{}, theta, data, rows, out, work);
  Space().fence();
  auto h = to_host(out);
  return std::vector<double>(h.begin(), h.end());
}

template <class Scalar, class Space, class Model>
Kokkos::View<Scalar*, typename Space::memory_space> parameters(const Model& model,
                                                               std::uint64_t seed) {
  Kokkos::View<Scalar*, typename Space::memory_space> theta("theta",
                                                             std::size_t(model.num_parameters()));
  const auto v = random_vector(theta.extent(0), seed, 0.4);
  auto h = Kokkos::create_mirror_view(theta);
  for (std::size_t j = 0; j < v.size(); ++j) h(j) = Scalar(v[j]);
  Kokkos::deep_copy(theta, h);
  return theta;
}

// Every selection of `data` the tests compare the paths on, with the
// panel rows to use: whole batches in one and in several panels (the last
// one part full), a single row, an odd range, a shuffled mini-batch.
template <class Scalar, class Space, class Model, class Loss>
void compare_paths(const Model& model, const Loss& loss, const DataOn<Space, Scalar>& data,
                   double tolerance) {
  const auto theta = parameters<Scalar, Space>(model, 7);
  const std::int64_t n = data.num_samples();
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(n, 37, 11);
  sampler.shuffle(1);
  auto check = [&](const auto& rows, std::int64_t panel, const char* what) {
    const auto reference = sums<Scalar, Space>(model, loss, theta, data, rows, 0);
    const auto layerwise = sums<Scalar, Space>(model, loss, theta, data, rows, panel);
    INFO(what << ", panel rows " << panel);
    CHECK(relative_distance(layerwise, reference) <= tolerance);
    CHECK(layerwise.back() == doctest::Approx(reference.back()).epsilon(tolerance));
  };
  check(RowRange{0, n}, 4096, "full batch, one panel");
  check(RowRange{0, n}, 16, "full batch, panels of 16");
  check(RowRange{3, 4}, 16, "one row");
  check(RowRange{5, n - 2}, 7, "odd range, panels of 7");
  check(sampler.batch(0), 16, "shuffled mini-batch of 37");
  check(sampler.batch(sampler.num_batches() - 1), 5, "the last, shorter mini-batch");
}

template <class Scalar, class Space>
void compare_models(double tolerance) {
  const std::int64_t n = 101;
  const int d = 6;
  const auto multiclass = random_problem(n, d, Kind::multiclass, 4, 21);
  const auto binary = random_problem(n, d, Kind::binary, 1, 22);
  const auto regression = random_problem(n, d, Kind::regression, 1, 23);
  const auto classes = DataOn<Space, Scalar>::from_host(n, d, multiclass.x, multiclass.y);
  const auto labels = DataOn<Space, Scalar>::from_host(n, d, binary.x, binary.y);
  const auto values = DataOn<Space, Scalar>::from_host(n, d, regression.x, regression.y);
  const std::vector<std::vector<int>> depths = {{}, {9}, {9, 5}};
  for (const auto& hidden : depths)
    for (Activation f : {Activation::identity, Activation::relu, Activation::tanh,
                         Activation::sigmoid}) {
      INFO("hidden layers " << hidden.size() << ", activation " << gradsum::activation_name(f));
      compare_paths<Scalar, Space>(MLP(d, hidden, 4, f), gradsum::SoftmaxCrossEntropy{}, classes, tolerance);
      compare_paths<Scalar, Space>(MLP(d, hidden, 1, f), gradsum::BinaryCrossEntropy{}, labels, tolerance);
      compare_paths<Scalar, Space>(MLP(d, hidden, 1, f), gradsum::SquaredError{}, values, tolerance);
    }
  INFO("softmax regression");
  compare_paths<Scalar, Space>(gradsum::Softmax(d, 4), gradsum::SoftmaxCrossEntropy{}, classes, tolerance);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("layer-wise and per-sample paths give the same gradient", Space,
                          layerwise_paths) {
  compare_models<double, Space>(1e-12);
  compare_models<float, Space>(1e-5);
}
TEST_CASE_TEMPLATE_APPLY(layerwise_paths, Spaces);

TEST_CASE_TEMPLATE_DEFINE("the step takes the layer-wise path with Sum, the per-sample one "
                          "otherwise, to the same gradient", Space, layerwise_step) {
  const auto p = random_problem(57, 5, Kind::multiclass, 3, 31);
  const auto data = DataOn<Space>::from_host(p.n, p.d, p.x, p.y);
  const MLP net(5, {8, 6}, 3, Activation::relu);
  const auto theta = parameters<double, Space>(net, 3);
  auto gradient = [&](const auto& reduction, bool layerwise) {
    MLP m = net;
    m.layerwise = layerwise;
    auto step = gradsum::make_step<double>(Space(), m, gradsum::SoftmaxCrossEntropy{},
                                           gradsum::SGD{}, gradsum::Objective{0.01},
                                           gradsum::Analytic{}, reduction);
    const auto r = step.evaluate(theta, data);
    auto g = to_host(step.gradient());
    std::vector<double> out(g.begin(), g.end());
    out.push_back(r.loss);
    return out;
  };
  const auto layerwise = gradient(gradsum::Sum{}, true);
  CHECK(relative_distance(layerwise, gradient(gradsum::Sum{}, false)) <= 1e-12);
  CHECK(relative_distance(layerwise, gradient(gradsum::Compensated{}, true)) <= 1e-12);
  CHECK(relative_distance(layerwise, gradient(gradsum::RuntimeReduction{}, true)) <= 1e-12);
  CHECK(relative_distance(layerwise, gradient(gradsum::Reproducible{}, true)) <= 1e-12);
  auto path = [&](const auto& gradient, const auto& reduction) {
    return gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                      gradsum::SGD{}, gradsum::Objective{}, gradient, reduction)
        .gradient_path();
  };
  CHECK(path(gradsum::Analytic{}, gradsum::Sum{}) == gradsum::GradientPath::layerwise);
  CHECK(path(gradsum::Analytic{}, gradsum::Reproducible{}) == gradsum::GradientPath::per_sample);
  CHECK(path(gradsum::CentralDifference{}, gradsum::Sum{}) == gradsum::GradientPath::per_sample);
  // Robust virtual workers: each part on the layer-wise path, in the room
  // of the workspace past the parts; the median of the same parts.
  auto median = [&](bool layerwise) {
    MLP m = net;
    m.layerwise = layerwise;
    auto step = gradsum::make_step<double>(
        Space(), m, gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{}, gradsum::Objective{0.01},
        gradsum::VirtualWorkers<>{gradsum::CoordinateMedian{}, 3}, gradsum::Sum{});
    CHECK(step.layerwise() == layerwise);
    step.evaluate(theta, data);
    auto g = to_host(step.gradient());
    return std::vector<double>(g.begin(), g.end());
  };
  const auto robust = median(true);
  CHECK(relative_distance(robust, median(false)) <= 1e-12);
  CHECK(relative_distance(robust, std::vector<double>(layerwise.begin(), layerwise.end() - 1)) > 1e-6);
}
TEST_CASE_TEMPLATE_APPLY(layerwise_step, Spaces);

TEST_CASE("gradient_path: the path each library model takes, and the words for it") {
  using gradsum::GradientPath;
  using Host = Kokkos::DefaultHostExecutionSpace;
  auto path = [](const auto& model, const auto& loss, const auto& reduction) {
    return gradsum::gradient_path<Host, double>(model, loss, reduction);
  };
  const gradsum::SoftmaxCrossEntropy softmax;
  const gradsum::BinaryCrossEntropy logistic;
  const auto reproducible = gradsum::RuntimeReduction::parse("reproducible");
  // Softmax: blocks of samples up to block_classes classes on host
  // spaces, matrix products above; per sample for Compensated.
  const int few = gradsum::Softmax::block_classes, many = few + 1;
  CHECK(path(gradsum::Softmax(4, few), softmax, gradsum::Sum{}) == GradientPath::blocks);
  CHECK(path(gradsum::Softmax(4, many), softmax, gradsum::Sum{}) == GradientPath::layerwise);
  CHECK(path(gradsum::Softmax(4, many), softmax, gradsum::Compensated{}) == GradientPath::blocks);
  CHECK(path(gradsum::Softmax(4, few), softmax, reproducible) == GradientPath::per_sample);
  gradsum::Softmax one_at_a_time(4, few);
  one_at_a_time.batched = false;
  CHECK(path(one_at_a_time, softmax, gradsum::Sum{}) == GradientPath::layerwise);
  one_at_a_time.layerwise = false;
  CHECK(path(one_at_a_time, softmax, gradsum::Sum{}) == GradientPath::per_sample);
  // Linear: blocks, or rank-one blocks for the reproducible sum.
  CHECK(path(gradsum::Linear(4), logistic, gradsum::Sum{}) == GradientPath::blocks);
  CHECK(path(gradsum::Linear(4), logistic, gradsum::Reproducible{}) ==
        GradientPath::rank_one_blocks);
  CHECK(path(gradsum::Linear(4), logistic, reproducible) == GradientPath::rank_one_blocks);
  // MLP: matrix products with the plain sum, else per sample.
  const MLP net(4, {5}, 3, Activation::relu);
  CHECK(path(net, softmax, gradsum::Sum{}) == GradientPath::layerwise);
  CHECK(path(net, softmax, gradsum::RuntimeReduction{}) == GradientPath::layerwise);
  CHECK(path(net, softmax, gradsum::Compensated{}) == GradientPath::per_sample);
  CHECK(std::string(gradsum::path_name(GradientPath::layerwise)) == "matrix path");
  CHECK(std::string(gradsum::path_name(GradientPath::blocks)) == "per-sample path in blocks");
  CHECK(std::string(gradsum::path_name(GradientPath::per_sample)) == "per-sample path");
}

TEST_CASE("784-1024-1024-10: layer-wise only, and its gradient is the central differences of "
          "its objective") {
  using Space = Kokkos::DefaultExecutionSpace;
  const int d = 784;
  const std::int64_t n = 24;
  const auto p = random_problem(n, d, Kind::multiclass, 10, 41);
  const auto data = DataOn<Space>::from_host(n, d, p.x, p.y);
  const MLP net(d, {1024, 1024}, 10, Activation::tanh);
  CHECK(net.per_sample_limits().find("GRADSUM_MLP_MAX_WIDTH") != std::string::npos);
  auto step = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{});
  auto theta = step.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::glorot_uniform().with_seed(5), theta);
  const auto result = step.evaluate(theta, data);
  const auto g = to_host(step.gradient());
  CHECK(std::isfinite(result.loss));
  // Weights and biases of every layer, the first and last of each block.
  std::vector<int> coordinates;
  for (int l = 0; l < net.num_layers(); ++l)
    for (int j : {net.weight_offset(l), net.weight_offset(l) + 517, net.bias_offset(l) - 1,
                  net.bias_offset(l), net.bias_offset(l) + 3})
      coordinates.push_back(j);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  const double eps = 1e-5;
  for (int j : coordinates) {
    const double saved = host(std::size_t(j));
    auto objective_at = [&](double value) {
      host(std::size_t(j)) = value;
      Kokkos::deep_copy(theta, host);
      return step.evaluate(theta, data).loss;
    };
    const double numeric = (objective_at(saved + eps) - objective_at(saved - eps)) / (2 * eps);
    host(std::size_t(j)) = saved;
    Kokkos::deep_copy(theta, host);
    INFO("coordinate " << j << ": layer-wise " << g[std::size_t(j)] << ", central difference "
                       << numeric);
    CHECK(std::fabs(g[std::size_t(j)] - numeric) <= 1e-7 * (1 + std::fabs(numeric)));
  }
  // And it trains: twenty SGD steps lower the objective.
  auto trainer = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                            gradsum::SGD{0.05});
  double first = 0, last = 0;
  for (int s = 0; s < 20; ++s) {
    const auto r = trainer(theta, data);
    if (s == 0) first = r.loss;
    last = r.loss;
  }
  CHECK(last < 0.5 * first);
}
