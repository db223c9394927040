// SPDX-License-Identifier: Apache-2.0
// Optimizers, schedules and stopping rules. Expected values come from the
// published update formulas written out here on the host, from the normal
// equations, and from the agreement of independent methods.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <zlib.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

using namespace gradsum_test;
using gradsum::Linear;
using gradsum::SquaredError;

namespace {

const std::string sklearn_data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/";

// A 1-feature least-squares problem whose gradient the tests can write by
// hand: J(w, b) = mean (w x + b - y)^2 / 2.
const std::vector<double> xs{0.5, -1.0, 2.0, 1.5};
const std::vector<double> ys{1.0, 0.0, 2.5, -0.5};

std::array<double, 2> gradient_at(const std::array<double, 2>& theta) {
  std::array<double, 2> g{0, 0};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = theta[0] * xs[i] + theta[1] - ys[i];
    g[0] += r * xs[i] / double(xs.size());
    g[1] += r / double(xs.size());
  }
  return g;
}

// Runs `steps` updates of `optimizer` through the library and returns theta.
template <class Space, class Optimizer>
std::array<double, 2> run_library(const Optimizer& optimizer, int steps) {
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      std::int64_t(xs.size()), 1, xs, ys);
  auto step = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, optimizer);
  auto theta = step.make_parameters();
  fill(theta, {0.3, -0.2});
  for (int k = 0; k < steps; ++k) step(theta, data);
  const auto h = to_host(theta);
  return {h[0], h[1]};
}

// Two updates by `plain`, a checkpoint, then one update by `plain` and
// one by `held` resumed from the checkpoint: both parameters, on the host,
// which must be equal when `held` checkpoints as `plain` does.
template <class Space, class Plain, class Held>
std::pair<std::vector<double>, std::vector<double>> third_update(const Plain& plain,
                                                                 const Held& held) {
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      std::int64_t(xs.size()), 1, xs, ys);
  auto straight = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, plain);
  auto theta_straight = straight.make_parameters();
  fill(theta_straight, {0.3, -0.2});
  for (int k = 0; k < 2; ++k) straight(theta_straight, data);
  const std::string path = temp_path("resumed.ckpt");
  gradsum::save_checkpoint(path, straight, theta_straight, gradsum::TrainingPosition{2, 1, 0, 1});
  straight(theta_straight, data);
  auto resumed = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, held);
  auto theta_resumed = resumed.make_parameters();
  gradsum::load_checkpoint(path, resumed, theta_resumed);
  resumed(theta_resumed, data);
  std::remove(path.c_str());
  return {to_host(theta_straight), to_host(theta_resumed)};
}

// Runs `steps` updates of the formula `rule(theta, g, k)` on the host.
std::array<double, 2> run_formula(
    int steps, const std::function<void(std::array<double, 2>&, const std::array<double, 2>&, int)>& rule) {
  std::array<double, 2> theta{0.3, -0.2};
  for (int k = 1; k <= steps; ++k) rule(theta, gradient_at(theta), k);
  return theta;
}

void check_close(const std::array<double, 2>& a, const std::array<double, 2>& b) {
  for (int j = 0; j < 2; ++j) CHECK(a[j] == doctest::Approx(b[j]).epsilon(1e-13));
}

std::vector<double> read_gz_text(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE_MESSAGE(f != nullptr, "cannot open " << path);
  std::string text;
  char buffer[4096];
  int n = 0;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) text.append(buffer, std::size_t(n));
  gzclose(f);
  std::istringstream in(text);
  std::vector<double> values;
  double v = 0;
  while (in >> v) values.push_back(v);
  return values;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("first-order updates follow their published formulas", Space,
                          first_order) {
  SUBCASE("SGD") {
    check_close(run_library<Space>(gradsum::SGD{0.1}, 3),
                run_formula(3, [](auto& t, const auto& g, int) {
                  for (int j = 0; j < 2; ++j) t[j] -= 0.1 * g[j];
                }));
  }
  SUBCASE("Momentum") {
    std::array<double, 2> v{0, 0};
    check_close(run_library<Space>(gradsum::Momentum{0.1, 0.8}, 3),
                run_formula(3, [&](auto& t, const auto& g, int) {
                  for (int j = 0; j < 2; ++j) {
                    v[j] = 0.8 * v[j] + g[j];
                    t[j] -= 0.1 * v[j];
                  }
                }));
  }
  SUBCASE("Nesterov: the look-ahead gradient") {
    // Sutskever et al. 2013: v' = mu v - lr grad(theta + mu v), theta' = theta + v'.
    // In the variable phi = theta + mu v this is the library's form; compare
    // by running the look-ahead form and mapping back.
    std::array<double, 2> v{0, 0}, theta{0.3, -0.2};
    for (int k = 0; k < 3; ++k) {
      std::array<double, 2> ahead{theta[0] + 0.7 * v[0], theta[1] + 0.7 * v[1]};
      const auto g = gradient_at(ahead);
      for (int j = 0; j < 2; ++j) {
        v[j] = 0.7 * v[j] - 0.05 * g[j];
        theta[j] += v[j];
      }
    }
    const std::array<double, 2> phi{theta[0] + 0.7 * v[0], theta[1] + 0.7 * v[1]};
    check_close(run_library<Space>(gradsum::Nesterov{0.05, 0.7}, 3), phi);
  }
  SUBCASE("AdaGrad") {
    std::array<double, 2> G{0, 0};
    check_close(run_library<Space>(gradsum::AdaGrad{0.2, 1e-10}, 3),
                run_formula(3, [&](auto& t, const auto& g, int) {
                  for (int j = 0; j < 2; ++j) {
                    G[j] += g[j] * g[j];
                    t[j] -= 0.2 * g[j] / (std::sqrt(G[j]) + 1e-10);
                  }
                }));
  }
  SUBCASE("RMSProp") {
    std::array<double, 2> s{0, 0};
    check_close(run_library<Space>(gradsum::RMSProp{0.01, 0.9, 1e-8}, 3),
                run_formula(3, [&](auto& t, const auto& g, int) {
                  for (int j = 0; j < 2; ++j) {
                    s[j] = 0.9 * s[j] + 0.1 * g[j] * g[j];
                    t[j] -= 0.01 * g[j] / (std::sqrt(s[j]) + 1e-8);
                  }
                }));
  }
  SUBCASE("Adam with bias correction") {
    std::array<double, 2> m{0, 0}, v{0, 0};
    check_close(run_library<Space>(gradsum::Adam{0.1, 0.9, 0.999, 1e-8}, 3),
                run_formula(3, [&](auto& t, const auto& g, int k) {
                  for (int j = 0; j < 2; ++j) {
                    m[j] = 0.9 * m[j] + 0.1 * g[j];
                    v[j] = 0.999 * v[j] + 0.001 * g[j] * g[j];
                    const double mh = m[j] / (1 - std::pow(0.9, k));
                    const double vh = v[j] / (1 - std::pow(0.999, k));
                    t[j] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
                  }
                }));
  }
  SUBCASE("AdamW: decay decoupled from the adaptive scaling") {
    std::array<double, 2> m{0, 0}, v{0, 0};
    gradsum::AdamW adamw;
    adamw.lr = 0.1;
    adamw.weight_decay = 0.5;
    check_close(run_library<Space>(adamw, 3),
                run_formula(3, [&](auto& t, const auto& g, int k) {
                  for (int j = 0; j < 2; ++j) {
                    m[j] = 0.9 * m[j] + 0.1 * g[j];
                    v[j] = 0.999 * v[j] + 0.001 * g[j] * g[j];
                    const double mh = m[j] / (1 - std::pow(0.9, k));
                    const double vh = v[j] / (1 - std::pow(0.999, k));
                    t[j] -= 0.1 * (mh / (std::sqrt(vh) + 1e-8) + 0.5 * t[j]);
                  }
                }));
  }
  SUBCASE("a scheduled learning rate") {
    const auto schedule = gradsum::Schedule::step_decay(2, 0.5).with_warmup(2);
    // factors: warm-up 1/2, 2/2, then 1, 1, 0.5
    check_close(run_library<Space>(gradsum::Scheduled<gradsum::SGD>(gradsum::SGD{0.2}, schedule), 5),
                run_formula(5, [](auto& t, const auto& g, int k) {
                  const double factor[] = {0, 0.5, 1.0, 1.0, 1.0, 0.5};
                  for (int j = 0; j < 2; ++j) t[j] -= 0.2 * factor[k] * g[j];
                }));
  }
}
TEST_CASE_TEMPLATE_APPLY(first_order, Spaces);

TEST_CASE_TEMPLATE_DEFINE("FirstOrder updates exactly as the optimizer it holds", Space,
                          first_order_runtime) {
  // The published-formula tests above check each optimizer; FirstOrder must
  // give the same bits, alone and under a schedule.
  auto same = [](const auto& optimizer) {
    INFO(optimizer.name());
    const gradsum::FirstOrder held(optimizer);
    CHECK(std::string(held.name()) == optimizer.name());
    CHECK(run_library<Space>(held, 4) == run_library<Space>(optimizer, 4));
    const auto schedule = gradsum::Schedule::exponential(0.7).with_warmup(1);
    CHECK(run_library<Space>(gradsum::Scheduled<gradsum::FirstOrder>(held, schedule), 4) ==
          run_library<Space>(gradsum::Scheduled<std::decay_t<decltype(optimizer)>>(optimizer, schedule), 4));
  };
  same(gradsum::SGD{0.1});
  same(gradsum::Momentum{0.1, 0.8});
  same(gradsum::Nesterov{0.05, 0.7});
  same(gradsum::AdaGrad{0.2, 1e-10});
  same(gradsum::RMSProp{0.01, 0.9, 1e-8});
  same(gradsum::Adam{0.1, 0.9, 0.999, 1e-8});
  gradsum::AdamW adamw;
  adamw.lr = 0.1;
  adamw.weight_decay = 0.5;
  same(adamw);
}
TEST_CASE_TEMPLATE_APPLY(first_order_runtime, Spaces);

namespace {

// The part of an update context the elementwise optimizers read: views of
// P parameters, their gradient and the state rows, on Space.
template <class Space, class Scalar>
struct BareContext {
  using execution_space = Space;
  using scalar_type = Scalar;
  Kokkos::View<Scalar*, typename Space::memory_space> theta, g;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Space::memory_space> s;
  Space space() const { return Space(); }
  int num_parameters() const { return int(theta.extent(0)); }
  Kokkos::RangePolicy<Space> policy() const { return {Space(), 0, num_parameters()}; }
  auto parameters() const { return theta; }
  auto gradient() const { return g; }
  auto state() const { return s; }
};

// Parameters, gradients and state rows of P values each (the state's
// values non-negative, as sums of squares are), from a seeded generator.
template <class Scalar>
struct ElementwiseCase {
  std::vector<Scalar> theta, g, s0, s1;
  explicit ElementwiseCase(int P) {
    gradsum::detail::SplitMix64 random(std::uint64_t(P) * 7 + 3);
    auto uniform = [&] { return Scalar(double(random.next() >> 11) * 0x1.0p-53); };
    for (int j = 0; j < P; ++j) {
      theta.push_back(uniform() - Scalar(0.5));
      g.push_back(Scalar(2) * uniform() - Scalar(1));
      s0.push_back(uniform() - Scalar(0.5));
      s1.push_back(uniform());
    }
  }
};

// One update of `optimizer` on the case through the library; theta and
// the state rows after it, on the host.
template <class Space, class Scalar, class Optimizer>
ElementwiseCase<Scalar> update_once(Optimizer optimizer, ElementwiseCase<Scalar> c, int rows) {
  using Memory = typename Space::memory_space;
  const int P = int(c.theta.size());
  BareContext<Space, Scalar> ctx{Kokkos::View<Scalar*, Memory>("theta", P),
                                 Kokkos::View<Scalar*, Memory>("g", P),
                                 Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory>("s", rows, P)};
  auto theta = Kokkos::create_mirror_view(ctx.theta);
  auto g = Kokkos::create_mirror_view(ctx.g);
  auto s = Kokkos::create_mirror_view(ctx.s);
  for (int j = 0; j < P; ++j) {
    theta(j) = c.theta[std::size_t(j)];
    g(j) = c.g[std::size_t(j)];
    s(0, j) = rows == 2 ? c.s0[std::size_t(j)] : c.s1[std::size_t(j)];
    if (rows == 2) s(1, j) = c.s1[std::size_t(j)];
  }
  Kokkos::deep_copy(ctx.theta, theta);
  Kokkos::deep_copy(ctx.g, g);
  Kokkos::deep_copy(ctx.s, s);
  optimizer.update(ctx);
  Kokkos::fence();
  Kokkos::deep_copy(theta, ctx.theta);
  Kokkos::deep_copy(s, ctx.s);
  for (int j = 0; j < P; ++j) {
    c.theta[std::size_t(j)] = theta(j);
    if (rows == 2) {
      c.s0[std::size_t(j)] = s(0, j);
      c.s1[std::size_t(j)] = s(1, j);
    } else {
      c.s1[std::size_t(j)] = s(0, j);
    }
  }
  return c;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("optimizers with square roots update each parameter as the formula does",
                          Space, elementwise_roots) {
  // The update runs over blocks of parameters (16 on the host); 37 is two
  // whole blocks and a partial one. Each parameter must come out with
  // exactly the bits of its formula evaluated on its own, in the same
  // order of operations, in float and in double.
  auto check = [](auto zero, const auto& optimizer, int rows, const auto& formula) {
    using Scalar = decltype(zero);
    INFO(optimizer.name(), " in ", sizeof(Scalar) == 4 ? "float" : "double");
    for (int P : {1, 16, 37}) {
      INFO("P = ", P);
      const ElementwiseCase<Scalar> start(P);
      const auto got = update_once<Space, Scalar>(optimizer, start, rows);
      for (int j = 0; j < P; ++j) {
        const auto jj = std::size_t(j);
        Scalar theta = start.theta[jj], m = start.s0[jj], v = start.s1[jj];
        formula(theta, start.g[jj], m, v);
        CHECK(got.theta[jj] == theta);
        CHECK(got.s1[jj] == v);
        if (rows == 2) CHECK(got.s0[jj] == m);
      }
    }
  };
  auto both = [&](const auto& optimizer, int rows, const auto& formula) {
    check(0.0f, optimizer, rows, formula);
    check(0.0, optimizer, rows, formula);
  };
  both(gradsum::AdaGrad{0.2, 1e-10}, 1, [](auto& t, auto g, auto&, auto& G) {
    using S = std::decay_t<decltype(t)>;
    G += g * g;
    t -= S(0.2) * g / (std::sqrt(G) + S(1e-10));
  });
  both(gradsum::RMSProp{0.01, 0.9, 1e-8}, 1, [](auto& t, auto g, auto&, auto& s) {
    using S = std::decay_t<decltype(t)>;
    s = S(0.9) * s + (S(1) - S(0.9)) * g * g;
    t -= S(0.01) * g / (std::sqrt(s) + S(1e-8));
  });
  gradsum::AdamW adamw;
  adamw.lr = 0.1;
  adamw.weight_decay = 0.5;
  both(adamw, 2, [](auto& t, auto g, auto& m, auto& v) {
    using S = std::decay_t<decltype(t)>;
    // The first update: t = 1, bias corrections 1 - beta.
    const S c1 = S(1 - std::pow(0.9, 1.0)), c2 = S(1 - std::pow(0.999, 1.0));
    m = S(0.9) * m + (S(1) - S(0.9)) * g;
    v = S(0.999) * v + (S(1) - S(0.999)) * g * g;
    const S m_hat = m / c1, v_hat = v / c2;
    t -= S(0.1) * (m_hat / (std::sqrt(v_hat) + S(1e-8)) + S(0.5) * t);
  });
}
TEST_CASE_TEMPLATE_APPLY(elementwise_roots, Spaces);

TEST_CASE("FirstOrder validates with its own learning rate and resumes Adam's checkpoints") {
  using Space = std::tuple_element_t<0, Spaces>;
  gradsum::FirstOrder sgd = gradsum::SGD{0.1};
  sgd.lr = -2;
  CHECK_THROWS_WITH_AS(sgd.validate(), "gradsum::SGD: learning rate lr must be positive and finite, got -2",
                       gradsum::Error);
  const gradsum::FirstOrder momentum = gradsum::Momentum{0.1, 1.5};
  CHECK_THROWS_WITH_AS(momentum.validate(),
                       "gradsum::Momentum: momentum must be in [0, 1), got 1.5", gradsum::Error);
  CHECK(gradsum::FirstOrder(gradsum::Adam{}).state_size(5) == 2);
  CHECK(gradsum::FirstOrder(gradsum::SGD{}).state_size(5) == 0);

  // Adam's bias correction depends on its update counter t: two updates by
  // Adam, a checkpoint, one update by FirstOrder holding an Adam must equal
  // three updates by Adam.
  const gradsum::Adam adam{0.1, 0.9, 0.999, 1e-8};
  const auto adam_resumed = third_update<Space>(adam, gradsum::FirstOrder(adam));
  CHECK(adam_resumed.first == adam_resumed.second);
}

TEST_CASE_TEMPLATE_DEFINE("LineSearchMethod updates exactly as the method it holds", Space,
                          line_search_runtime) {
  // The tests below check each method against known optima;
  // LineSearchMethod must give the same bits.
  auto same = [](const auto& method) {
    INFO(method.name());
    const gradsum::LineSearchMethod held(method);
    CHECK(std::string(held.name()) == method.name());
    CHECK(held.state_size(7) == method.state_size(7));
    CHECK(held.uses_hessian() == gradsum::detail::optimizer_uses_hessian(method));
    CHECK(run_library<Space>(held, 3) == run_library<Space>(method, 3));
  };
  gradsum::Newton newton;
  newton.lr = 0.5;
  same(newton);
  gradsum::SteepestDescent armijo, exact;
  exact.line_search = gradsum::SteepestDescent::LineSearch::exact;
  same(armijo);
  same(exact);
  gradsum::LBFGS wolfe, backtracking;
  wolfe.m = 3;
  backtracking.line_search = gradsum::LBFGS::LineSearch::armijo;
  same(wolfe);
  same(backtracking);
}
TEST_CASE_TEMPLATE_APPLY(line_search_runtime, Spaces);

TEST_CASE("LineSearchMethod validates as its method, resumes L-BFGS's checkpoints and refuses "
          "the Hessian a model lacks") {
  using Space = std::tuple_element_t<0, Spaces>;
  gradsum::LBFGS bad;
  bad.m = 0;
  CHECK_THROWS_WITH_AS(gradsum::LineSearchMethod(bad).validate(),
                       "gradsum::LBFGS: history m must be >= 1, got 0", gradsum::Error);

  // L-BFGS keeps its history's bookkeeping on the host: two updates by
  // LBFGS, a checkpoint, one update by LineSearchMethod holding an LBFGS
  // must equal three updates by LBFGS.
  const gradsum::LBFGS lbfgs{};
  const auto lbfgs_resumed = third_update<Space>(lbfgs, gradsum::LineSearchMethod(lbfgs));
  CHECK(lbfgs_resumed.first == lbfgs_resumed.second);

  // Newton needs second derivatives, which an MLP has not: Newton itself
  // does not compile there; held, it is refused when the step is built,
  // and L-BFGS held the same way trains.
  const gradsum::MLP net(1, {3}, 1, gradsum::Activation::tanh);
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      std::int64_t(xs.size()), 1, xs, ys);
  CHECK_THROWS_WITH_AS(gradsum::make_step<double>(Space(), net, SquaredError{},
                                                  gradsum::LineSearchMethod(gradsum::Newton{})),
                       doctest::Contains("gradsum::Step: optimizer newton needs the Hessian, "
                                         "which model mlp with loss squared_error does not "
                                         "provide: the Model must provide `hessian("),
                       gradsum::Error);
  auto mlp = gradsum::make_step<double>(Space(), net, SquaredError{},
                                        gradsum::LineSearchMethod(lbfgs));
  auto theta = mlp.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::glorot_uniform().with_seed(5), theta);
  const double before = mlp.evaluate(theta, data).loss;
  for (int k = 0; k < 5; ++k) mlp(theta, data);
  CHECK(mlp.evaluate(theta, data).loss < before);
}

TEST_CASE("learning-rate schedules match their closed forms") {
  using gradsum::Schedule;
  CHECK(Schedule::constant().factor(1000) == 1.0);
  CHECK(Schedule::step_decay(3, 0.1).factor(2) == 1.0);
  CHECK(Schedule::step_decay(3, 0.1).factor(7) == doctest::Approx(0.01));
  CHECK(Schedule::exponential(0.9).factor(4) == doctest::Approx(0.6561));
  CHECK(Schedule::cosine(10).factor(0) == doctest::Approx(1.0));
  CHECK(Schedule::cosine(10).factor(5) == doctest::Approx(0.5));
  CHECK(Schedule::cosine(10, 0.1).factor(10) == doctest::Approx(0.1));
  CHECK(Schedule::cosine(10, 0.1).factor(50) == doctest::Approx(0.1));
  CHECK(Schedule::constant().with_warmup(4).factor(0) == doctest::Approx(0.25));
  CHECK(Schedule::constant().with_warmup(4).factor(3) == doctest::Approx(1.0));
  CHECK(Schedule::exponential(0.5).with_warmup(2).factor(3) == doctest::Approx(0.5));
  CHECK_THROWS_WITH_AS(Schedule::step_decay(0, 0.5).validate(),
                       "gradsum::Schedule: every must be >= 1, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(Schedule::exponential(1.5).validate(),
                       "gradsum::Schedule: gamma must be in (0, 1], got 1.5", gradsum::Error);
}

TEST_CASE_TEMPLATE_DEFINE("steepest descent with exact line search zig-zags to the minimum",
                          Space, steepest_exact) {
  // A 2-D ill-conditioned quadratic: least squares for (w, b) with
  // features far from zero, so the Hessian [[E x^2, E x], [E x, 1]] has a
  // condition number in the hundreds.
  std::vector<double> x, y;
  for (int i = 0; i < 50; ++i) {
    x.push_back(1.0 + 0.3 * std::sin(1.7 * i));  // condition number about 50
    y.push_back(2.0 * x.back() - 3.0 + 0.1 * std::cos(2.3 * i));
  }
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(50, 1, x, y);
  gradsum::SteepestDescent sd;
  sd.line_search = gradsum::SteepestDescent::LineSearch::exact;
  auto step = gradsum::make_step<double>(Space(), Linear(1), SquaredError{}, sd);
  auto theta = step.make_parameters();
  // Known minimum from the normal equations.
  double sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (int i = 0; i < 50; ++i) sx += x[i], sxx += x[i] * x[i], sy += y[i], sxy += x[i] * y[i];
  const auto best = solve({sxx, sx, sx, 50.0}, {sxy, sy});

  std::vector<double> previous;
  double worst_cos = 0;
  gradsum::StepResult r;
  int it = 0;
  for (; it < 3000; ++it) {
    r = step(theta, data);
    const auto g = to_host(step.gradient());  // the direction was -g
    if (r.gradient_norm < 1e-12) break;
    // Orthogonality holds exactly; in double it is measurable while the
    // gradient's rounding error (about 1e-16 of the data's scale) stays
    // below 1e-10 of its norm, that is while ||g|| > 1e-5.
    if (!previous.empty() && r.gradient_norm > 1e-5) {
      const double c = (g[0] * previous[0] + g[1] * previous[1]) /
                       (std::hypot(g[0], g[1]) * std::hypot(previous[0], previous[1]));
      worst_cos = std::max(worst_cos, std::fabs(c));
    }
    previous = g;
  }
  MESSAGE("exact line search: " << it << " steps, largest |cos| between successive directions "
                                << worst_cos);
  CHECK(it > 20);  // ill-conditioned: many zig-zag steps
  CHECK(worst_cos <= 1e-10);
  const auto w = to_host(theta);
  CHECK(w[0] == doctest::Approx(best[0]).epsilon(1e-9));
  CHECK(w[1] == doctest::Approx(best[1]).epsilon(1e-9));
}
TEST_CASE_TEMPLATE_APPLY(steepest_exact, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Newton, L-BFGS and Adam find the same logistic-regression optimum",
                          Space, logistic_optimum) {
  const std::string path = sklearn_data + "breast_cancer.csv";
  if (!std::ifstream(path)) {
    MESSAGE("skipped: " << path << " is missing (Debian package python3-sklearn)");
    return;
  }
  auto table = gradsum::read_csv(path);
  gradsum::StandardScaler::fit(table).transform(table);
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(std::int64_t(table.num_rows), int(table.num_features),
                                    table.features, table.targets);
  const gradsum::Objective objective{0.01, true};
  const Linear model(int(table.num_features));

  auto newton = gradsum::make_step<double>(Space(), model, gradsum::BinaryCrossEntropy{},
                                           gradsum::Newton{}, objective);
  auto theta_newton = newton.make_parameters();
  gradsum::StepResult r;
  int iterations = 0;
  for (; iterations < 10; ++iterations) {
    r = newton(theta_newton, data);
    if (r.gradient_norm <= 1e-8) break;
  }
  r = newton.evaluate(theta_newton, data);
  MESSAGE("Newton: gradient norm " << r.gradient_norm << " after " << iterations << " steps");
  CHECK(r.gradient_norm <= 1e-8);

  auto lbfgs = gradsum::make_step<double>(Space(), model, gradsum::BinaryCrossEntropy{},
                                          gradsum::LBFGS{}, objective);
  auto theta_lbfgs = lbfgs.make_parameters();
  for (int k = 0; k < 200 && lbfgs.evaluate(theta_lbfgs, data).gradient_norm > 1e-9; ++k)
    lbfgs(theta_lbfgs, data);
  CHECK(lbfgs.evaluate(theta_lbfgs, data).gradient_norm <= 1e-9);
  CHECK(relative_distance(to_host(theta_lbfgs), to_host(theta_newton), 31) <= 1e-5);

  // Adam run long with a decaying rate settles on the same point.
  gradsum::Adam adam;
  adam.lr = 0.02;
  auto adam_step = gradsum::make_step<double>(
      Space(), model, gradsum::BinaryCrossEntropy{},
      gradsum::Scheduled<gradsum::Adam>(adam, gradsum::Schedule::cosine(2500)), objective);
  auto theta_adam = adam_step.make_parameters();
  for (int k = 0; k < 2500; ++k) adam_step(theta_adam, data);
  const double adam_distance = relative_distance(to_host(theta_adam), to_host(theta_newton), 31);
  MESSAGE("Adam: relative distance to the Newton optimum " << adam_distance);
  CHECK(adam_distance <= 1e-5);
}
TEST_CASE_TEMPLATE_APPLY(logistic_optimum, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Newton solves least squares in one step (diabetes data)", Space,
                          newton_least_squares) {
  const std::string features = sklearn_data + "diabetes_data_raw.csv.gz";
  const std::string targets = sklearn_data + "diabetes_target.csv.gz";
  if (!std::ifstream(features) || !std::ifstream(targets)) {
    MESSAGE("skipped: the diabetes files are missing (Debian package python3-sklearn)");
    return;
  }
  auto x = read_gz_text(features);
  const auto y = read_gz_text(targets);
  const int d = 10;
  const std::int64_t n = std::int64_t(y.size());
  REQUIRE(x.size() == std::size_t(n) * d);
  // Standardise the features so the normal equations are well conditioned.
  for (int j = 0; j < d; ++j) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < n; ++i) mean += x[i * d + j] / double(n);
    for (std::int64_t i = 0; i < n; ++i) var += (x[i * d + j] - mean) * (x[i * d + j] - mean) / double(n);
    for (std::int64_t i = 0; i < n; ++i) x[i * d + j] = (x[i * d + j] - mean) / std::sqrt(var);
  }
  // Normal equations with the bias column.
  const int m = d + 1;
  std::vector<double> A(std::size_t(m) * m, 0.0), b(std::size_t(m), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (int r = 0; r < m; ++r) {
      const double xr = r < d ? x[i * d + r] : 1.0;
      for (int c = 0; c < m; ++c) A[r * m + c] += xr * (c < d ? x[i * d + c] : 1.0);
      b[r] += xr * y[i];
    }
  const auto expected = solve(A, b);

  const auto data =
      gradsum::Dataset<double, typename Space::memory_space>::from_host(n, d, x, y);
  gradsum::Newton newton;
  newton.line_search = false;
  auto step = gradsum::make_step<double>(Space(), Linear(d), SquaredError{}, newton);
  auto theta = step.make_parameters();
  step(theta, data);
  const auto w = to_host(theta);
  CHECK(relative_distance(w, expected, std::size_t(m)) <= 1e-10);
  CHECK(step.evaluate(theta, data).gradient_norm <= 1e-8);
}
TEST_CASE_TEMPLATE_APPLY(newton_least_squares, Spaces);

TEST_CASE("stopping rules fire on the aggregated values") {
  gradsum::Stopper by_gradient(gradsum::StoppingRules{0, 1e-6, 0});
  CHECK(by_gradient.check(1, {1.0, 1e-3, 10}) == gradsum::StopReason::none);
  CHECK(by_gradient.check(2, {1.0, 1e-7, 10}) == gradsum::StopReason::gradient_norm);
  gradsum::Stopper by_loss(gradsum::StoppingRules{0, 0, 1e-3});
  CHECK(by_loss.check(1, {1.0, 1.0, 10}) == gradsum::StopReason::none);
  CHECK(by_loss.check(2, {0.5, 1.0, 10}) == gradsum::StopReason::none);
  CHECK(by_loss.check(3, {0.49999, 1.0, 10}) == gradsum::StopReason::loss_change);
  gradsum::Stopper by_steps(gradsum::StoppingRules{3, 0, 0});
  CHECK(by_steps.check(2, {1.0, 1.0, 10}) == gradsum::StopReason::none);
  CHECK(by_steps.check(3, {1.0, 1.0, 10}) == gradsum::StopReason::max_steps);
  CHECK_THROWS_WITH_AS(gradsum::Stopper(gradsum::StoppingRules{-1, 0, 0}),
                       "gradsum::StoppingRules: max_steps must be >= 0, got -1", gradsum::Error);
}

TEST_CASE_TEMPLATE_DEFINE("bad hyperparameters are rejected with their names", Space,
                          bad_hyperparameters) {
  auto build = [](auto optimizer) {
    return gradsum::make_step<double>(Space(), Linear(2), SquaredError{}, optimizer);
  };
  CHECK_THROWS_WITH_AS(build(gradsum::Momentum{-0.1, 0.9}),
                       "gradsum::Momentum: learning rate lr must be positive and finite, got -0.1",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::Nesterov{0.1, 1.0}),
                       "gradsum::Nesterov: momentum must be in [0, 1), got 1", gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::Adam{0.1, 1.2}),
                       "gradsum::Adam: beta1 must be in [0, 1), got 1.2", gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::Adam{0.1, 0.9, -0.5}),
                       "gradsum::Adam: beta2 must be in [0, 1), got -0.5", gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::Adam{0.1, 0.9, 0.999, 0.0}),
                       "gradsum::Adam: eps must be positive and finite, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::RMSProp{0.1, 0.9, -1.0}),
                       "gradsum::RMSProp: eps must be positive and finite, got -1", gradsum::Error);
  CHECK_THROWS_WITH_AS(build(gradsum::AdaGrad{0.0}),
                       "gradsum::AdaGrad: learning rate lr must be positive and finite, got 0",
                       gradsum::Error);
  gradsum::AdamW adamw;
  adamw.weight_decay = -1;
  CHECK_THROWS_WITH_AS(build(adamw),
                       "gradsum::AdamW: weight_decay must be non-negative and finite, got -1",
                       gradsum::Error);
  gradsum::LBFGS lbfgs;
  lbfgs.m = 0;
  CHECK_THROWS_WITH_AS(build(lbfgs), "gradsum::LBFGS: history m must be >= 1, got 0",
                       gradsum::Error);
  gradsum::Newton newton;
  newton.lr = -1.0;
  CHECK_THROWS_WITH_AS(build(newton),
                       "gradsum::Newton: learning rate lr must be positive and finite, got -1",
                       gradsum::Error);
  // Newton refuses models above its documented size limit.
  {
    const auto wide = gradsum::Dataset<double, typename Space::memory_space>::from_host(
        2, 3, {1, 2, 3, 4, 5, 6}, {0, 1});
    gradsum::Newton small;
    small.max_parameters = 3;
    auto step = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, small);
    auto theta = step.make_parameters();
    CHECK_THROWS_WITH_AS(step(theta, wide),
                         doctest::Contains("gradsum::Newton: the model has 4 parameters, above "
                                           "the Newton limit of 3"),
                         gradsum::Error);
  }
  // Exact line search needs a quadratic objective.
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(
      2, 2, {1, 2, 3, 4}, {0, 1});
  gradsum::SteepestDescent sd;
  sd.line_search = gradsum::SteepestDescent::LineSearch::exact;
  auto step = gradsum::make_step<double>(Space(), Linear(2), gradsum::BinaryCrossEntropy{}, sd);
  auto theta = step.make_parameters();
  CHECK_THROWS_WITH_AS(step(theta, data),
                       doctest::Contains("exact line search is for quadratic objectives"),
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(bad_hyperparameters, Spaces);
