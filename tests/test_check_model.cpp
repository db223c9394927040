// SPDX-License-Identifier: Apache-2.0
// check_model: it catches a backward that assigns instead of adding, a
// wrong partial derivative, NaN in forward and in backward (each a flaw
// put into the model of examples/own_model.hpp); it passes that model and
// the library's own, in float and double; it refuses bad knobs.

#include "test_helpers.hpp"

#include <gradsum/diagnostics/check_model.hpp>

#include "../examples/own_model.hpp"

#include <string>

using namespace gradsum_test;

namespace {

// What is wrong with each deliberately broken model.
enum class Flaw { assigns, half_db, nan_forward, nan_backward };

// The example's z = a exp(b x) + c, theta = (a, b, c), with one mistake of
// its Flaw.
template <Flaw flaw>
struct Flawed : Exponential {
  template <class S>
  KOKKOS_FUNCTION void forward(const S* t, const S* x, S* z) const {
    Exponential::forward(t, x, z);
    if (flaw == Flaw::nan_forward) z[0] += gradsum::math::sqrt(S(-1) - x[0] * x[0]);
  }
  template <class S>
  KOKKOS_FUNCTION void backward(const S* t, const S* x, const S* dz, S* g) const {
    const S e = gradsum::math::exp(t[1] * x[0]);
    const S db = (flaw == Flaw::half_db ? S(0.5) : S(1)) * dz[0] * t[0] * x[0] * e;
    if (flaw == Flaw::assigns) {
      g[0] = dz[0] * e;
      g[1] = db;
      g[2] = dz[0];
      return;
    }
    g[0] += dz[0] * e;
    g[1] += db;
    g[2] += dz[0];
    if (flaw == Flaw::nan_backward) g[2] += gradsum::math::sqrt(S(-1) - x[0] * x[0]);
  }
};

template <class Space, class Scalar, class Model, class Loss>
gradsum::GradientReport check(const Model& model, const Loss& loss,
                              const gradsum::CheckModelOptions& options = {}) {
  const auto report = gradsum::check_model<Scalar>(Space(), model, loss, options);
  INFO(std::string(model.name()) << " with " << std::string(loss.name()) << " in "
                                  << sizeof(Scalar) * 8 << " bits:\n"
                                  << report);
  return report;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("check_model: each broken model is caught and named", Space,
                          check_model_broken) {
  using gradsum::SquaredError;
  auto right = check<Space, double>(Exponential{}, SquaredError{});
  CHECK(right.passed);
  CHECK(right.accumulates);
  CHECK(right.finite);
  CHECK(right.coordinates == std::vector<int>{0, 1, 2});
  CHECK(right.points == 3);
  CHECK(right.samples == 4);
  CHECK(right.worst_error <= right.tolerance);
  CHECK(right.diagnosis.find("matches central differences") != std::string::npos);

  // The gradient from zeros is right, so only the accumulate rule sees it.
  auto assigns = check<Space, double>(Flawed<Flaw::assigns>{}, SquaredError{});
  CHECK_FALSE(assigns.passed);
  CHECK_FALSE(assigns.accumulates);
  CHECK(assigns.diagnosis.rfind("backward assigns into g instead of adding (g after a second "
                                "call equals g after the first",
                                0) == 0);

  for (auto* scalar : {"double", "float"}) {
    INFO(scalar);
    const auto half = std::string(scalar) == "double"
                          ? check<Space, double>(Flawed<Flaw::half_db>{}, SquaredError{})
                          : check<Space, float>(Flawed<Flaw::half_db>{}, SquaredError{});
    CHECK_FALSE(half.passed);
    CHECK(half.accumulates);
    REQUIRE_FALSE(half.worst.empty());
    CHECK(half.worst.front().index == 1);
    CHECK(half.worst.front().analytic / half.worst.front().numeric ==
          doctest::Approx(0.5).epsilon(1e-2));
    CHECK(half.diagnosis.rfind("d/dtheta_1 differs from central differences at point ", 0) == 0);
    CHECK(half.diagnosis.find("(off by a factor 0.5)") != std::string::npos);
  }

  auto nan_forward = check<Space, double>(Flawed<Flaw::nan_forward>{}, SquaredError{});
  CHECK_FALSE(nan_forward.passed);
  CHECK_FALSE(nan_forward.finite);
  CHECK(nan_forward.diagnosis.rfind("forward returned NaN at sample 0, output 0 with theta drawn "
                                    "from [-0.5, 0.5] (point 0)",
                                    0) == 0);
  auto nan_backward = check<Space, float>(Flawed<Flaw::nan_backward>{}, SquaredError{});
  CHECK_FALSE(nan_backward.passed);
  CHECK_FALSE(nan_backward.finite);
  CHECK(nan_backward.diagnosis.rfind("backward's contribution has NaN at sample 0, parameter 2",
                                     0) == 0);
}
TEST_CASE_TEMPLATE_APPLY(check_model_broken, Spaces);

TEST_CASE_TEMPLATE_DEFINE("check_model passes the library's models in float and double", Space,
                          check_model_library) {
  using namespace gradsum;
  auto both = [](const auto& model, const auto& loss) {
    const auto d = check<Space, double>(model, loss);
    CHECK(d.passed);
    CHECK(d.tolerance == GradientTolerance<double>::tolerance);
    const auto f = check<Space, float>(model, loss);
    CHECK(f.passed);
    CHECK(f.tolerance == GradientTolerance<float>::tolerance);
    CHECK(int(d.coordinates.size()) == model.num_parameters());
  };
  both(Exponential{}, SquaredError{});
  both(Linear(5), SquaredError{});
  both(Linear(5), BinaryCrossEntropy{});
  both(Softmax(4, 3), SoftmaxCrossEntropy{});
  both(MLP(4, {5, 3}, 3, std::vector<Activation>{Activation::tanh, Activation::sigmoid}),
       SoftmaxCrossEntropy{});
  both(MLP(3, {4, 4}, 1, std::vector<Activation>{Activation::sigmoid, Activation::tanh}),
       BinaryCrossEntropy{});

  // On rows of a given data set, here of a classification problem.
  const auto problem = random_problem(50, 4, Kind::multiclass, 3, 77);
  const auto data = Dataset<float, typename Space::memory_space>::from_host(problem.n, 4,
                                                                           problem.x, problem.y);
  CheckModelOptions options;
  options.rows = 8;
  options.seed = 5;
  const auto on_data = check_model(Space(), Softmax(4, 3), SoftmaxCrossEntropy{}, data, options);
  INFO(on_data);
  CHECK(on_data.passed);
  CHECK(on_data.samples == 8);
}
TEST_CASE_TEMPLATE_APPLY(check_model_library, Spaces);

// Squared error that accepts no target in [-1, 1] and no class index.
struct FarTargets : gradsum::SquaredError {
  template <class Scalar>
  KOKKOS_FUNCTION static bool is_valid_target(Scalar y, int) {
    return y > Scalar(5);
  }
};

// Two outputs in a model that declares room for one.
struct TooManyOutputs : gradsum::Linear {
  using gradsum::Linear::Linear;
  KOKKOS_FUNCTION int num_outputs() const { return 2; }
};

// A model without parameters.
struct NoParameters : gradsum::Linear {
  using gradsum::Linear::Linear;
  KOKKOS_FUNCTION int num_parameters() const { return 0; }
};

TEST_CASE("check_model refuses bad knobs and data, naming them") {
  using namespace gradsum;
  using Space = Kokkos::DefaultHostExecutionSpace;
  const Linear model(3);
  auto refused = [&](CheckModelOptions options, const char* message) {
    CHECK_THROWS_WITH_AS(check_model(Space(), model, SquaredError{}, options), message,
                         gradsum::Error);
  };
  CheckModelOptions o;
  o.points = 0;
  refused(o, "gradsum::check_model: points must be >= 1, got 0");
  o = {};
  o.rows = 0;
  refused(o, "gradsum::check_model: rows must be >= 1, got 0");
  o = {};
  o.max_full = -1;
  refused(o, "gradsum::check_model: max_full must be >= 0, got -1");
  o = {};
  o.sampled = 0;
  refused(o, "gradsum::check_model: sampled must be >= 1, got 0");
  o = {};
  o.theta_scale = 0;
  refused(o, "gradsum::check_model: theta_scale must be finite and > 0, got 0");
  o = {};
  o.x_scale = -1;
  refused(o, "gradsum::check_model: x_scale must be finite and > 0, got -1");
  o = {};
  o.step = -1;
  refused(o, "gradsum::check_model: step must be finite and >= 0 (0: the default), got -1");
  o = {};
  o.tolerance = -1;
  refused(o, "gradsum::check_model: tolerance must be finite and >= 0 (0: the default), got -1");

  using Data = Dataset<double, Space::memory_space>;
  const auto wide = Data::from_host(2, 4, std::vector<double>(8, 0.5), {1.0, 2.0});
  CHECK_THROWS_WITH_AS(check_model(Space(), model, SquaredError{}, wide),
                       "gradsum::check_model: data has 4 features but model linear expects 3",
                       gradsum::Error);
  const auto labels = Data::from_host(2, 3, std::vector<double>(6, 0.5), {0.0, 5.5});
  CHECK_THROWS_WITH_AS(check_model(Space(), model, BinaryCrossEntropy{}, labels),
                       "gradsum::check_model: target 5.5 of row 1 is not valid for loss "
                       "binary_cross_entropy with 1 output(s)",
                       gradsum::Error);
  const auto empty = Data::from_host(0, 3, {}, {});
  CHECK_THROWS_WITH_AS(check_model(Space(), model, SquaredError{}, empty),
                       "gradsum::check_model: data has no rows; expected at least 1",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(check_model(Space(), model, SoftmaxCrossEntropy{}),
                       "gradsum::check_model: loss softmax_cross_entropy cannot take a model with "
                       "1 output(s) (model linear)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(check_model(Space(), model, FarTargets{}),
                       doctest::Contains("gradsum::check_model: loss squared_error accepts "
                                         "neither target "),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(check_model(Space(), TooManyOutputs(3), SoftmaxCrossEntropy{}),
                       "gradsum::check_model: model linear has 2 outputs; expected 1 to 1 "
                       "(Model::output_capacity, else GRADSUM_MAX_OUTPUTS)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(check_model(Space(), NoParameters(3), SquaredError{}),
                       "gradsum::check_model: model linear has 0 parameters; expected at least 1",
                       gradsum::Error);
}
