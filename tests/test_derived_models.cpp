// SPDX-License-Identifier: Apache-2.0
// A class derived from a library model that redefines backward (or
// forward) trains with its own definitions: the base's fast paths
// (layer-wise products, MLP's sample_gradient, Softmax's and Linear's
// blocks) would compute the base's gradient and silently bypass them. A
// derived class that redefines neither keeps the fast paths.

#include "test_helpers.hpp"

using namespace gradsum_test;

namespace {

// Each contributes twice the base's gradient: backward runs the base's twice.
template <class Base>
struct Doubled : Base {
  using Base::Base;
  template <class Scalar>
  KOKKOS_FUNCTION void backward(const Scalar* theta, const Scalar* x, const Scalar* dz,
                                Scalar* g) const {
    Base::backward(theta, x, dz, g);
    Base::backward(theta, x, dz, g);
  }
};
using DoubledSoftmax = Doubled<gradsum::Softmax>;
using DoubledMLP = Doubled<gradsum::MLP>;
using DoubledLinear = Doubled<gradsum::Linear>;
// Logits shifted by one in class 0: forward redefined, backward inherited
// (the shift does not change dz/dtheta).
struct ShiftedSoftmax : gradsum::Softmax {
  using gradsum::Softmax::Softmax;
  template <class Scalar>
  KOKKOS_FUNCTION void forward(const Scalar* theta, const Scalar* x, Scalar* z) const {
    gradsum::Softmax::forward(theta, x, z);
    z[0] += Scalar(1);
  }
};
// Only a new name: the fast paths stay.
struct NamedSoftmax : gradsum::Softmax {
  using gradsum::Softmax::Softmax;
  static const char* name() { return "named_softmax"; }
};

template <class Space, class Model, class Loss, class Reduction = gradsum::Sum>
std::vector<double> summed(const Model& model, const Loss& loss, const HostProblem& p,
                           const std::vector<double>& theta_host, Reduction reduction = {}) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         reduction);
  auto theta = step.make_parameters();
  fill(theta, theta_host);
  step.evaluate(theta, data);
  const auto s = to_host(step.sums());
  return std::vector<double>(s.data(), s.data() + model.num_parameters() + 1);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("a derived model's own backward and forward are not bypassed", Space,
                          derived_models) {
  const int d = 5, C = 3;
  const auto p = random_problem(41, d, Kind::multiclass, C, 31);
  const auto theta = random_vector(std::size_t(C) * (d + 1), 32, 0.4);
  const auto textbook = reference_sums(p, C, Kind::multiclass, theta, 0, p.n);
  const std::size_t P = theta.size();

  SUBCASE("Softmax with its backward redefined, on every path") {
    for (bool layerwise : {true, false})
      for (bool batched : {true, false}) {
        DoubledSoftmax model(d, C);
        model.layerwise = layerwise;
        model.batched = batched;
        INFO("layerwise " << layerwise << ", batched " << batched);
        const auto g = summed<Space>(model, gradsum::SoftmaxCrossEntropy{}, p, theta);
        for (std::size_t j = 0; j < P; ++j)
          CHECK(g[j] == doctest::Approx(double(2 * textbook[j])).epsilon(1e-12));
        CHECK(g[P] == doctest::Approx(double(textbook[P])).epsilon(1e-12));
      }
  }
  SUBCASE("Softmax with its forward redefined") {
    // The same logits as the base model's with class 0's bias one larger.
    auto moved = theta;
    moved[std::size_t(d)] += 1;
    const auto expected = reference_sums(p, C, Kind::multiclass, moved, 0, p.n);
    ShiftedSoftmax model(d, C);
    const auto g = summed<Space>(model, gradsum::SoftmaxCrossEntropy{}, p, theta);
    CHECK(relative_distance(g, expected, P + 1) <= 1e-12);
  }
  SUBCASE("a derived class that redefines neither keeps the fast paths") {
    using Data = gradsum::Dataset<double, typename Space::memory_space>;
    const auto data = Data::from_host(p.n, p.d, p.x, p.y);
    NamedSoftmax model(d, C);
    model.batched = false;
    auto step = gradsum::make_step<double>(Space(), model, gradsum::SoftmaxCrossEntropy{});
    CHECK(step.layerwise());
    DoubledSoftmax doubled(d, C);
    doubled.batched = false;
    auto bypassing = gradsum::make_step<double>(Space(), doubled, gradsum::SoftmaxCrossEntropy{});
    CHECK_FALSE(bypassing.layerwise());
    const auto g = summed<Space>(model, gradsum::SoftmaxCrossEntropy{}, p, theta);
    CHECK(relative_distance(g, textbook, P + 1) <= 1e-12);
  }
  SUBCASE("MLP with its backward redefined") {
    const auto q = random_problem(29, 4, Kind::multiclass, 3, 33);
    for (bool layerwise : {true, false}) {
      gradsum::MLP base(4, {6}, 3, gradsum::Activation::tanh);
      DoubledMLP model(4, {6}, 3, gradsum::Activation::tanh);
      base.layerwise = model.layerwise = layerwise;
      const auto w = random_vector(std::size_t(base.num_parameters()), 34, 0.5);
      // The base's gradient on its one-sample-at-a-time path.
      base.layerwise = false;
      const auto once = summed<Space>(base, gradsum::SoftmaxCrossEntropy{}, q, w);
      const auto g = summed<Space>(model, gradsum::SoftmaxCrossEntropy{}, q, w);
      INFO("layerwise " << layerwise);
      for (int j = 0; j < base.num_parameters(); ++j)
        CHECK(g[std::size_t(j)] == doctest::Approx(2 * once[std::size_t(j)]).epsilon(1e-12));
    }
  }
  SUBCASE("Linear with its backward redefined, Sum and Reproducible") {
    const auto q = random_problem(37, 6, Kind::regression, 1, 35);
    const auto w = random_vector(7, 36, 0.5);
    const auto expected = reference_sums(q, 1, Kind::regression, w, 0, q.n);
    const auto g = summed<Space>(DoubledLinear(6), gradsum::SquaredError{}, q, w);
    const auto r = summed<Space>(DoubledLinear(6), gradsum::SquaredError{}, q, w,
                                 gradsum::Reproducible{});
    for (std::size_t j = 0; j < 7; ++j) {
      CHECK(g[j] == doctest::Approx(double(2 * expected[j])).epsilon(1e-12));
      CHECK(r[j] == doctest::Approx(double(2 * expected[j])).epsilon(1e-12));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(derived_models, Spaces);

// The library's own models keep their fast paths; derived ones that
// redefine forward or backward lose them.
static_assert(gradsum::detail::has_dense_layers<gradsum::Softmax>::value);
static_assert(gradsum::detail::has_dense_layers<gradsum::MLP>::value);
static_assert(gradsum::detail::has_dense_layers<NamedSoftmax>::value);
static_assert(!gradsum::detail::has_dense_layers<DoubledSoftmax>::value);
static_assert(!gradsum::detail::has_dense_layers<ShiftedSoftmax>::value);
static_assert(!gradsum::detail::has_dense_layers<DoubledMLP>::value);
static_assert(gradsum::detail::has_sample_gradient<gradsum::MLP, gradsum::SoftmaxCrossEntropy,
                                                   double>::value);
static_assert(!gradsum::detail::has_sample_gradient<DoubledMLP, gradsum::SoftmaxCrossEntropy,
                                                    double>::value);
static_assert(gradsum::detail::has_block_residuals<gradsum::Linear, gradsum::SquaredError,
                                                   double>::value);
static_assert(!gradsum::detail::has_block_residuals<DoubledLinear, gradsum::SquaredError,
                                                    double>::value);
