// SPDX-License-Identifier: Apache-2.0
// The MLP: backpropagation against central differences, the per-sample
// and layer-wise paths, the partition identity, initializers, gradient health
// (symmetry, vanishing, exploding), clipping, and digits.

#include "digits.hpp"
#include "test_helpers.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

using namespace gradsum_test;
using gradsum::Activation;
using gradsum::BinaryCrossEntropy;
using gradsum::Initializer;
using gradsum::MLP;
using gradsum::RowRange;
using gradsum::SoftmaxCrossEntropy;
using gradsum::SquaredError;

namespace {

template <class Space, class Scalar = double>
Kokkos::View<Scalar*, typename Space::memory_space> parameters(const MLP& model,
                                                               const Initializer& init) {
  Kokkos::View<Scalar*, typename Space::memory_space> theta(
      "theta", std::size_t(model.num_parameters()));
  gradsum::initialize(model, init, theta);
  return theta;
}

const Activation all_activations[] = {Activation::identity, Activation::relu, Activation::tanh,
                                      Activation::sigmoid};

}  // namespace

TEST_CASE("MLP: layout, limits and errors") {
  const MLP net(5, {4, 3}, 2, Activation::tanh);
  CHECK(net.num_layers() == 3);
  // (5 x 4 + 4) + (4 x 3 + 3) + (3 x 2 + 2)
  CHECK(net.num_parameters() == 24 + 15 + 8);
  CHECK(net.weight_offset(1) == 24);
  CHECK(net.bias_offset(1) == 24 + 12);
  CHECK(net.is_regularized(19));
  CHECK_FALSE(net.is_regularized(20));  // first bias of layer 0
  CHECK(net.is_regularized(24));
  CHECK_FALSE(net.is_regularized(46));
  CHECK(net.describe() == "5-4(tanh)-3(tanh)-2");
  CHECK(net.architecture() != MLP(5, {3, 4}, 2, Activation::tanh).architecture());
  CHECK(net.architecture() != MLP(5, {4, 3}, 2, Activation::relu).architecture());

  auto message = [](auto&& make) {
    try {
      make();
    } catch (const gradsum::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([] { MLP(0, {3}, 1); }).find("num_features must be at least 1, got 0") !=
        std::string::npos);
  CHECK(message([] { MLP(3, {3, 0}, 1); }).find("layer 2 has width 0") != std::string::npos);
  // Wider than the per-sample path allows: built, and trained layer-wise only.
  const MLP wide(3, {MLP::max_width + 1}, 1);
  CHECK(wide.per_sample_limits().find("GRADSUM_MLP_MAX_WIDTH") != std::string::npos);
  CHECK(net.per_sample_limits().empty());
  using Host = Kokkos::DefaultHostExecutionSpace;
  CHECK(message([&] {
          gradsum::make_step<double>(Host(), wide, gradsum::SquaredError{}, gradsum::SGD{},
                                     gradsum::Objective{}, gradsum::Analytic{},
                                     gradsum::Compensated{});
        }) == "gradsum::Step: this step would take the per-sample path, and the per-sample path "
              "takes layers of at most 256 units (GRADSUM_MLP_MAX_WIDTH) and 1024 units in all "
              "(GRADSUM_MLP_MAX_UNITS); 3-257(relu)-1 has 258 units; the layer-wise path has no "
              "such limits: train it with the Analytic gradient, the Sum reduction and layerwise "
              "= true");
  MLP per_sample = wide;
  per_sample.layerwise = false;
  CHECK(message([&] {
          gradsum::make_step<double>(Host(), per_sample, gradsum::SquaredError{});
        }).find("GRADSUM_MLP_MAX_WIDTH") != std::string::npos);
  CHECK(message([&] { gradsum::make_step<double>(Host(), wide, gradsum::SquaredError{}); }) ==
        "no error");
  CHECK(message([] { MLP(3, std::vector<int>(MLP::max_layers, 2), 1); })
            .find("GRADSUM_MLP_MAX_LAYERS") != std::string::npos);
  CHECK(message([] { MLP(3, {2, 2}, 1, std::vector<Activation>{Activation::relu}); })
            .find("1 activations given for 2 hidden layers") != std::string::npos);
  CHECK(message([] { gradsum::parse_activation("softplus"); }).find("'softplus'") !=
        std::string::npos);
  CHECK(message([] { Initializer::parse("constant:x"); }).find("'x'") != std::string::npos);
  CHECK(message([] { Initializer::parse("uniform:-1"); }).find("must be >= 0") !=
        std::string::npos);
  CHECK(message([] { Initializer::parse("xavier"); }).find("unknown initializer 'xavier'") !=
        std::string::npos);
}

TEST_CASE("MLP: a description rebuilds the network it describes, and bad ones are named") {
  const MLP net(13, {32, 16}, 3, std::vector<Activation>{Activation::tanh, Activation::relu});
  const MLP back = MLP::from_description("13-32(tanh)-16(relu)-3");
  CHECK(back.describe() == net.describe());
  CHECK(back.architecture() == net.architecture());
  CHECK(back.num_parameters() == (13 * 32 + 32) + (32 * 16 + 16) + (16 * 3 + 3));
  CHECK(MLP::from_description("4-1").num_parameters() == 5);  // no hidden layer

  auto message = [](const char* text) {
    try {
      MLP::from_description(text);
    } catch (const gradsum::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::pair<const char*, const char*> bad[] = {
      {"", "'' at character 1: a width is missing"},
      {"13", "at character 3: a network needs an input and an output width"},
      {"13-32-3", "'13-32-3' at character 6: a hidden layer has no activation"},
      {"13-32(tanh)-3(relu)", "at character 20: the output layer takes no activation"},
      {"13(relu)-3", "at character 3: the input width takes no activation"},
      {"13-32(tanh-3", "at character 6: an activation is not closed by ')'"},
      {"13-32(swish)-3", "unknown activation 'swish'"},
      {"13-0", "at character 4: a width is out of range"},
      {"13-99999999999-3", "at character 4: a width is out of range"},
      {"13-32(tanh)+3", "at character 12: unexpected character"},
      {"13-", "at character 4: a width is missing"},
  };
  for (const auto& entry : bad) {
    // Not a structured binding: Clang 14 cannot capture one (CAPTURE is a lambda).
    const char* text = entry.first;
    CAPTURE(text);
    CHECK(message(text).find(entry.second) != std::string::npos);
  }
}

TEST_CASE("a checkpoint of one network does not load into another of as many parameters") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  // 2-3(tanh)-1 and 2-3(relu)-1: 13 parameters each.
  auto make = [](Activation a) {
    return gradsum::make_step<double>(Space(), MLP(2, {3}, 1, a), SquaredError{},
                                      gradsum::SGD{0.1});
  };
  auto tanh_step = make(Activation::tanh);
  auto relu_step = make(Activation::relu);
  auto theta = tanh_step.make_parameters();
  const std::string path = "gradsum_test_mlp_" + std::to_string(::getpid()) + ".ckpt";
  gradsum::save_checkpoint(path, tanh_step, theta, gradsum::TrainingPosition{});
  CHECK(gradsum::read_checkpoint(path).model == "mlp:2-3(tanh)-1");
  CHECK_THROWS_WITH(gradsum::load_checkpoint(path, relu_step, theta),
                    doctest::Contains("was written for model mlp:2-3(tanh)-1 but this step has "
                                      "mlp:2-3(relu)-1"));
  std::remove(path.c_str());
}

TEST_CASE("initializers: documented distributions, seeded, biases zero") {
  const MLP net(30, {40}, 20, Activation::relu);
  const auto glorot = gradsum::initial_parameters(net, Initializer::glorot_uniform().with_seed(1));
  CHECK(glorot == gradsum::initial_parameters(net, Initializer::glorot_uniform().with_seed(1)));
  CHECK(glorot != gradsum::initial_parameters(net, Initializer::glorot_uniform().with_seed(2)));
  for (int l = 0; l < net.num_layers(); ++l) {
    const double fan_in = net.layer_inputs(l), fan_out = net.layer_outputs(l);
    const auto begin = glorot.begin() + net.weight_offset(l);
    const auto end = glorot.begin() + net.bias_offset(l);
    const double bound = std::sqrt(6.0 / (fan_in + fan_out));
    double sum_sq = 0;
    for (auto it = begin; it != end; ++it) {
      CHECK(std::fabs(*it) <= bound);
      sum_sq += *it * *it;
    }
    // U(-a, a) has variance a^2 / 3; 800 draws estimate it within ~10%.
    const double variance = sum_sq / double(end - begin);
    CHECK(variance == doctest::Approx(bound * bound / 3).epsilon(0.15));
    for (int j = net.bias_offset(l); j < net.bias_offset(l) + net.layer_outputs(l); ++j)
      CHECK(glorot[std::size_t(j)] == 0.0);
  }
  // He normal: variance 2 / fan_in; the sample mean near 0.
  const auto he = gradsum::initial_parameters(net, Initializer::he_normal().with_seed(3));
  double s = 0, ss = 0;
  const int count = net.bias_offset(0);
  for (int j = 0; j < count; ++j) {
    s += he[std::size_t(j)];
    ss += he[std::size_t(j)] * he[std::size_t(j)];
  }
  CHECK(std::fabs(s / count) < 4 * std::sqrt(2.0 / 30 / count));
  CHECK(ss / count == doctest::Approx(2.0 / 30).epsilon(0.1));
  const auto c = gradsum::initial_parameters(net, Initializer::parse("constant:0.25"));
  CHECK(std::all_of(c.begin(), c.end(), [](double v) { return v == 0.25; }));
}

TEST_CASE_TEMPLATE_DEFINE("MLP gradient check: every depth, activation and head", Space,
                          mlp_gradient_check) {
  const gradsum::Objective objective{0.01, true};
  auto check = [&](MLP net, auto loss, Kind kind, std::uint64_t seed) {
    const auto problem = random_problem(24, net.num_features(), kind, net.num_outputs(), seed);
    const auto data = DataOn<Space>::from_host(problem.n, problem.d, problem.x, problem.y);
    // Random biases too: with zero biases a ReLU unit whose inputs are all
    // zero sits exactly on its kink, where no derivative exists.
    Kokkos::View<double*, typename Space::memory_space> theta(
        "theta", std::size_t(net.num_parameters()));
    fill(theta, random_vector(theta.extent(0), seed + 1000, 0.6));
    const double error = gradsum::gradient_check(Space(), net, loss, theta, data,
                                                 gradsum::CentralDifference{1e-5}, objective)
                             .relative_error;
    INFO(net.describe() << " with " << loss.name() << ", seed " << seed << ": " << error);
    CHECK(error <= 1e-6);
  };
  std::uint64_t seed = 100;
  for (int depth = 1; depth <= 3; ++depth)
    for (Activation a : all_activations) {
      const std::vector<int> widths{5, 4, 3};
      const std::vector<int> hidden(widths.begin(), widths.begin() + depth);
      check(MLP(4, hidden, 1, a), SquaredError{}, Kind::regression, ++seed);
      check(MLP(4, hidden, 1, a), BinaryCrossEntropy{}, Kind::binary, ++seed);
      check(MLP(4, hidden, 3, a), SoftmaxCrossEntropy{}, Kind::multiclass, ++seed);
    }
}
TEST_CASE_TEMPLATE_APPLY(mlp_gradient_check, Spaces);

TEST_CASE_TEMPLATE_DEFINE("MLP: backward(), the fused path and the step agree", Space,
                          mlp_paths) {
  // On the host, backward() after forward() and the loss derivative (the
  // contract's separate calls) against sample_gradient(), one sample at a time.
  const MLP net(6, {7, 5}, 3, std::vector<Activation>{Activation::tanh, Activation::relu});
  const auto problem = random_problem(19, 6, Kind::multiclass, 3, 7);
  const auto theta = gradsum::initial_parameters(net, Initializer::he_uniform().with_seed(8));
  const int P = net.num_parameters();
  std::vector<double> separate(std::size_t(P), 0.0), fused(std::size_t(P), 0.0);
  double loss_separate = 0, loss_fused = 0;
  const SoftmaxCrossEntropy loss;
  for (std::int64_t i = 0; i < problem.n; ++i) {
    const double* x = &problem.x[std::size_t(i) * 6];
    double z[3], dz[3];
    net.forward(theta.data(), x, z);
    loss_separate += loss.value(z, 3, problem.y[std::size_t(i)]);
    loss.derivative(z, 3, problem.y[std::size_t(i)], dz);
    net.backward(theta.data(), x, dz, separate.data());
    loss_fused += net.sample_gradient(loss, theta.data(), x, problem.y[std::size_t(i)],
                                      fused.data());
  }
  CHECK(relative_distance(fused, separate) <= 1e-15);
  CHECK(loss_fused == doctest::Approx(loss_separate).epsilon(1e-15));

  // Through the step: the sums of the batch.
  auto data = DataOn<Space>::from_host(problem.n, 6, problem.x, problem.y);
  Kokkos::View<double*, typename Space::memory_space> device_theta("theta", std::size_t(P));
  fill(device_theta, theta);
  auto step = gradsum::make_step<double>(Space(), net, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  step.evaluate(device_theta, data, RowRange{0, problem.n});
  std::vector<double> sums = to_host(step.sums());
  sums.resize(std::size_t(P) + 1);
  std::vector<double> expected = separate;
  expected.push_back(loss_separate);
  CHECK(relative_distance(sums, expected) <= 1e-13);
}
TEST_CASE_TEMPLATE_APPLY(mlp_paths, Spaces);

TEST_CASE_TEMPLATE_DEFINE("MLP partition identity: parts sum to the batch gradient", Space,
                          mlp_partition) {
  const MLP net(5, {6, 4}, 3, Activation::sigmoid);
  const std::int64_t n = 61;
  const auto problem = random_problem(n, 5, Kind::multiclass, 3, 31);
  const auto data = DataOn<Space>::from_host(n, 5, problem.x, problem.y);
  const auto theta = parameters<Space>(net, Initializer::glorot_uniform().with_seed(4));
  auto step = gradsum::make_step<double>(Space(), net, SoftmaxCrossEntropy{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  const int P = net.num_parameters();
  auto sums_of = [&](std::int64_t begin, std::int64_t end) {
    if (begin == end) return std::vector<double>(std::size_t(P) + 1, 0.0);
    step.evaluate(theta, data, RowRange{begin, end});
    auto s = to_host(step.sums());
    s.resize(std::size_t(P) + 1);
    return s;
  };
  const auto full = sums_of(0, n);
  for (int parts = 1; parts <= 8; ++parts) {
    std::vector<double> total(std::size_t(P) + 1, 0.0);
    for (int p = 0; p < parts; ++p) {
      const auto range = gradsum::partition(n, parts, p);
      const auto part = sums_of(range.begin, range.end);
      for (std::size_t j = 0; j < total.size(); ++j) total[j] += part[j];
    }
    INFO("parts = " << parts);
    CHECK(relative_distance(total, full) <= 1e-12);
  }
}
TEST_CASE_TEMPLATE_APPLY(mlp_partition, Spaces);

TEST_CASE_TEMPLATE_DEFINE("symmetry: a constant start keeps hidden units identical", Space,
                          mlp_symmetry) {
  const MLP net(4, {6, 5}, 3, Activation::tanh);
  const auto problem = random_problem(80, 4, Kind::multiclass, 3, 12);
  const auto data = DataOn<Space>::from_host(problem.n, 4, problem.x, problem.y);
  auto train = [&](const Initializer& init) {
    auto theta = parameters<Space>(net, init);
    auto step = gradsum::make_step<double>(Space(), net, SoftmaxCrossEntropy{},
                                           gradsum::SGD{0.5});
    gradsum::StepResult first, last;
    for (int t = 0; t < 50; ++t) (t == 0 ? first : last) = step(theta, data);
    CHECK(last.loss < first.loss);  // it learns, but as a network of one unit per layer
    return theta;
  };
  const auto constant = train(Initializer::constant(0.3));
  const auto groups = gradsum::symmetric_units(net, constant);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].layer == 0);
  CHECK(groups[0].units == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(groups[1].layer == 1);
  CHECK(groups[1].units.size() == 5);
  // The weights really moved away from the constant.
  CHECK(to_host(constant)[0] != 0.3);

  const auto random = train(Initializer::glorot_uniform().with_seed(5));
  CHECK(gradsum::symmetric_units(net, random).empty());
}
TEST_CASE_TEMPLATE_APPLY(mlp_symmetry, Spaces);

TEST_CASE_TEMPLATE_DEFINE("gradient health: vanishing, exploding, and healthy networks", Space,
                          mlp_health) {
  const auto problem = random_problem(64, 8, Kind::multiclass, 4, 3);
  const auto data = DataOn<Space>::from_host(problem.n, 8, problem.x, problem.y);
  auto health = [&](const MLP& net, const Initializer& init, auto loss) {
    const auto theta = parameters<Space>(net, init);
    auto step = gradsum::make_step<double>(Space(), net, loss, gradsum::SGD{});
    step.evaluate(theta, data);
    const auto report = gradsum::gradient_health(net, theta, step.gradient());
    // The norms against a host computation from the gradient itself.
    const auto g = to_host(step.gradient());
    for (const auto& layer : report.layers) {
      const int end = layer.layer + 1 < net.num_layers() ? net.weight_offset(layer.layer + 1)
                                                         : net.num_parameters();
      double ss = 0;
      for (int j = net.weight_offset(layer.layer); j < end; ++j)
        ss += g[std::size_t(j)] * g[std::size_t(j)];
      CHECK(layer.gradient_norm == doctest::Approx(std::sqrt(ss)).epsilon(1e-12));
    }
    for (const auto& w : report.warnings) MESSAGE(net.describe() << ": " << w);
    return report;
  };
  // Ten sigmoid layers: every layer scales the backpropagated signal by
  // f' <= 1/4 times a Glorot matrix of norm about 1, so the first layer's
  // gradient is some 4^-9 ~ 4e-6 of the last's.
  const MLP deep(8, std::vector<int>(9, 16), 4, Activation::sigmoid);
  const auto vanishing = health(deep, Initializer::glorot_uniform().with_seed(1),
                                SoftmaxCrossEntropy{});
  CHECK(vanishing.vanishing);
  CHECK(vanishing.first_to_last < 1e-3);
  CHECK(vanishing.layers.front().gradient_norm * 1e3 < vanishing.layers.back().gradient_norm);
  CHECK_FALSE(vanishing.exploding);

  // Identity activations with weights of standard deviation 3 in layers of
  // 16: every layer multiplies the signal by about 3 sqrt(16) = 12.
  const MLP linear_deep(8, std::vector<int>(5, 16), 1, Activation::identity);
  const auto exploding = health(linear_deep, Initializer::normal(3.0).with_seed(2),
                                SquaredError{});
  CHECK(exploding.exploding);

  const MLP shallow(8, {16}, 4, Activation::tanh);
  const auto healthy = health(shallow, Initializer::glorot_uniform().with_seed(3),
                              SoftmaxCrossEntropy{});
  CHECK(healthy.healthy());
  CHECK(healthy.warnings.empty());
}
TEST_CASE_TEMPLATE_APPLY(mlp_health, Spaces);

TEST_CASE_TEMPLATE_DEFINE("clipping bounds the applied gradient norm to C exactly", Space,
                          mlp_clipping) {
  const MLP net(5, {8}, 1, Activation::tanh);
  const auto problem = random_problem(50, 5, Kind::regression, 1, 9, 3.0);
  const auto data = DataOn<Space>::from_host(problem.n, 5, problem.x, problem.y);
  for (double C : {0.05, 1e6}) {
    auto theta = parameters<Space>(net, Initializer::glorot_uniform().with_seed(6));
    const auto before = to_host(theta);
    auto step = gradsum::make_step<double>(
        Space(), net, SquaredError{}, gradsum::clip_gradient_norm(gradsum::SGD{1.0}, C));
    const auto r = step(theta, data);
    const auto after = to_host(theta);
    double moved = 0;
    for (std::size_t j = 0; j < after.size(); ++j)
      moved += (after[j] - before[j]) * (after[j] - before[j]);
    moved = std::sqrt(moved);
    INFO("C = " << C << ", gradient norm " << r.gradient_norm << ", moved " << moved);
    if (r.gradient_norm > C) {
      // SGD with lr 1 moves theta by exactly the clipped gradient.
      CHECK(moved == doctest::Approx(C).epsilon(1e-12));
      CHECK(step.optimizer().clipped_updates == 1);
    } else {
      CHECK(moved == doctest::Approx(r.gradient_norm).epsilon(1e-12));
      CHECK(step.optimizer().clipped_updates == 0);
    }
  }
  CHECK_THROWS_WITH_AS(gradsum::make_step<double>(Space(), net, SquaredError{},
                                                  gradsum::clip_gradient_norm(gradsum::SGD{}, -1.0)),
                       doctest::Contains("max_norm must be positive, got -1"), gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(mlp_clipping, Spaces);

TEST_CASE("digits: a one-hidden-layer MLP reaches 95% held-out accuracy") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto [train_table, test_table] = standardized_digits();
  CHECK(test_table.num_rows == 359);
  CHECK(train_table.num_rows == 1438);
  const auto train = DataOn<Space>::from_host(std::int64_t(train_table.num_rows), 64,
                                            train_table.features, train_table.targets);
  const auto test = DataOn<Space>::from_host(std::int64_t(test_table.num_rows), 64,
                                           test_table.features, test_table.targets);
  const MLP net(64, {32}, 10, Activation::tanh);
  auto theta = parameters<Space>(net, Initializer::glorot_uniform().with_seed(7));
  auto step = gradsum::make_step<double>(Space(), net, SoftmaxCrossEntropy{},
                                         gradsum::Adam{0.01}, gradsum::Objective{1e-4, true});
  gradsum::MiniBatchSampler<Space::memory_space> sampler(train.num_samples(), 64, 7);
  for (int epoch = 0; epoch < 20; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) step(theta, train, sampler.batch(b));
  }
  const auto correct = gradsum::count_correct(Space(), net, SoftmaxCrossEntropy{}, theta, test);
  const double accuracy = double(correct) / double(test.num_samples());
  MESSAGE("digits held-out accuracy: " << accuracy << " (" << correct << " of "
                                       << test.num_samples() << ")");
  CHECK(accuracy >= 0.95);
}
