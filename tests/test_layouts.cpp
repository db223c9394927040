// SPDX-License-Identifier: Apache-2.0
// Features in LayoutLeft and in strided Views whose rows are not
// contiguous, read in place: the same numbers in LayoutRight are the
// reference for gradients (every path: blocks, rank-one blocks, layer-wise,
// per sample, central differences), predictions and metrics; central
// differences check the gathered rows' analytic gradient on their own.
// And MLP::forward_with in a kernel of one's own.

#include "test_helpers.hpp"

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

using namespace gradsum_test;

namespace {

// The numbers of one problem in three layouts: row-major, column-major,
// and every other column of a row-major n x 2d table (column stride 2).
template <class Memory>
struct SameNumbers {
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> right;
  Kokkos::View<double**, Kokkos::LayoutLeft, Memory> left;
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> wide;
  Kokkos::View<double**, Kokkos::LayoutStride, Memory> strided;
  Kokkos::View<double*, Memory> y;
};

template <class Memory>
SameNumbers<Memory> same_numbers(const HostProblem& p) {
  const std::size_t n = std::size_t(p.n), d = std::size_t(p.d);
  SameNumbers<Memory> s;
  s.right = decltype(s.right)("right", n, d);
  s.left = decltype(s.left)("left", n, d);
  s.wide = decltype(s.wide)("wide", n, 2 * d);
  s.y = decltype(s.y)("y", n);
  auto hr = Kokkos::create_mirror_view(s.right);
  auto hl = Kokkos::create_mirror_view(s.left);
  auto hw = Kokkos::create_mirror_view(s.wide);
  auto hy = Kokkos::create_mirror_view(s.y);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      hr(i, j) = hl(i, j) = hw(i, 2 * j + 1) = p.x[i * d + j];
      hw(i, 2 * j) = 1e300;  // never read
    }
    hy(i) = p.y[i];
  }
  Kokkos::deep_copy(s.right, hr);
  Kokkos::deep_copy(s.left, hl);
  Kokkos::deep_copy(s.wide, hw);
  Kokkos::deep_copy(s.y, hy);
  s.strided = decltype(s.strided)(s.wide.data() + 1, Kokkos::LayoutStride(n, 2 * d, d, 2));
  return s;
}

// The step's gradient of J at theta over `rows` of `data`.
template <class Step, class Theta, class Data, class Rows>
std::vector<double> gradient_at(Step& step, const Theta& theta, const Data& data,
                                const Rows& rows) {
  step.evaluate(theta, data, rows);
  return to_host(step.gradient());
}

// The step's gradient on the three layouts (full batch and a shuffled
// mini-batch), each against LayoutRight's: equal bits where `exact`.
template <class Space, class MakeStep>
void check_layouts(const HostProblem& p, int P, const MakeStep& make, bool exact) {
  using Memory = typename Space::memory_space;
  const auto s = same_numbers<Memory>(p);
  const gradsum::Dataset right(s.right, s.y);
  const gradsum::Dataset left(s.left, s.y);
  const gradsum::Dataset strided(s.strided, s.y);
  static_assert(std::is_same<typename decltype(left)::array_layout, Kokkos::LayoutLeft>::value);
  auto step = make();
  Kokkos::View<double*, Memory> theta("theta", std::size_t(P));
  fill(theta, random_vector(std::size_t(P), 11));
  std::vector<std::int64_t> order;
  for (std::int64_t i = p.n - 1; i >= 0; i -= 3) order.push_back(i);
  const auto batch = row_list<Memory>(order);
  for (int part = 0; part < 2; ++part) {
    INFO("batch " << (part == 0 ? "all rows" : "shuffled rows"));
    const auto reference = part == 0 ? gradient_at(step, theta, right, right.all_rows())
                                     : gradient_at(step, theta, right, batch);
    for (int which = 0; which < 2; ++which) {
      INFO((which == 0 ? "LayoutLeft" : "LayoutStride, column stride 2"));
      const auto got = which == 0 ? (part == 0 ? gradient_at(step, theta, left, left.all_rows())
                                               : gradient_at(step, theta, left, batch))
                                  : (part == 0 ? gradient_at(step, theta, strided,
                                                             strided.all_rows())
                                               : gradient_at(step, theta, strided, batch));
      if (exact) CHECK(got == reference);
      else CHECK(relative_distance(got, reference) <= 1e-13);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("layouts: LayoutLeft and strided features give LayoutRight's gradient",
                          Space, layouts_gradients) {
  const auto regression = random_problem(37, 5, Kind::regression, 1, 41);
  const auto classes = random_problem(37, 5, Kind::multiclass, 3, 42);
  const Space space;
  SUBCASE("Linear, Sum (blocks on host spaces)") {
    check_layouts<Space>(regression, 6, [&] {
      return gradsum::make_step<double>(space, gradsum::Linear(5), gradsum::SquaredError{});
    }, false);
  }
  SUBCASE("Linear, Reproducible (rank-one blocks on host spaces): the same bits") {
    check_layouts<Space>(regression, 6, [&] {
      return gradsum::make_step<double>(space, gradsum::Linear(5), gradsum::SquaredError{},
                                        gradsum::SGD{}, gradsum::Objective{},
                                        gradsum::Analytic{}, gradsum::Reproducible{});
    }, true);
  }
  SUBCASE("Softmax, Sum") {
    check_layouts<Space>(classes, 18, [&] {
      return gradsum::make_step<double>(space, gradsum::Softmax(5, 3),
                                        gradsum::SoftmaxCrossEntropy{});
    }, false);
  }
  const gradsum::MLP net(5, {7}, 3, gradsum::Activation::tanh);
  SUBCASE("MLP, Sum (layer-wise: a gathered panel, the same bits)") {
    check_layouts<Space>(classes, net.num_parameters(), [&] {
      return gradsum::make_step<double>(space, net, gradsum::SoftmaxCrossEntropy{});
    }, true);
  }
  SUBCASE("MLP, Reproducible (per sample): the same bits") {
    check_layouts<Space>(classes, net.num_parameters(), [&] {
      return gradsum::make_step<double>(space, net, gradsum::SoftmaxCrossEntropy{},
                                        gradsum::SGD{}, gradsum::Objective{},
                                        gradsum::Analytic{}, gradsum::Reproducible{});
    }, true);
  }
  SUBCASE("MLP, central differences (forward only)") {
    check_layouts<Space>(classes, net.num_parameters(), [&] {
      return gradsum::make_step<double>(space, net, gradsum::SoftmaxCrossEntropy{},
                                        gradsum::SGD{}, gradsum::Objective{},
                                        gradsum::CentralDifference{});
    }, true);
  }
}
TEST_CASE_TEMPLATE_APPLY(layouts_gradients, Spaces);

TEST_CASE_TEMPLATE_DEFINE("layouts: gathered rows' gradient matches central differences", Space,
                          layouts_finite_differences) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(23, 4, Kind::regression, 1, 43);
  const auto s = same_numbers<Memory>(p);
  const gradsum::Dataset left(s.left, s.y);
  const gradsum::MLP net(4, {6}, 1, gradsum::Activation::tanh);
  Kokkos::View<double*, Memory> theta("theta", std::size_t(net.num_parameters()));
  fill(theta, random_vector(std::size_t(net.num_parameters()), 12));
  for (bool layerwise : {true, false}) {
    INFO("layerwise " << layerwise);
    gradsum::MLP model = net;
    model.layerwise = layerwise;
    auto analytic = gradsum::make_step<double>(Space(), model, gradsum::SquaredError{});
    auto differences = gradsum::make_step<double>(Space(), model, gradsum::SquaredError{},
                                                  gradsum::SGD{}, gradsum::Objective{},
                                                  gradsum::CentralDifference{});
    CHECK(relative_distance(gradient_at(analytic, theta, left, left.all_rows()),
                            gradient_at(differences, theta, left, left.all_rows())) <= 1e-7);
  }
}
TEST_CASE_TEMPLATE_APPLY(layouts_finite_differences, Spaces);

TEST_CASE_TEMPLATE_DEFINE("layouts: predict and the metrics read LayoutLeft and strided features",
                          Space, layouts_predict) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(29, 4, Kind::multiclass, 3, 44);
  const auto s = same_numbers<Memory>(p);
  const gradsum::SoftmaxCrossEntropy loss;
  const Space space;
  // Per sample; and layer by layer, a hidden layer past the per-sample limit.
  const gradsum::MLP small(4, {6}, 3, gradsum::Activation::relu);
  const gradsum::MLP wide(4, {gradsum::MLP::max_width + 9}, 3, gradsum::Activation::relu);
  for (const auto& net : {small, wide}) {
    INFO("MLP " << net.describe());
    Kokkos::View<double*, Memory> theta("theta", std::size_t(net.num_parameters()));
    fill(theta, random_vector(std::size_t(net.num_parameters()), 13));
    auto outputs = [&](const auto& x) {
      Kokkos::View<double**, Memory> out("out", 29, 3);
      gradsum::predict(space, net, theta, x, out);
      return out;
    };
    auto probabilities = [&](const auto& x) {
      Kokkos::View<double**, Memory> out("p", 29, 3);
      gradsum::predict_probabilities(space, net, loss, theta, x, out);
      return out;
    };
    auto classes = [&](const auto& x) {
      Kokkos::View<int*, Memory> out("classes", 29);
      gradsum::predict_classes(space, net, loss, theta, x, out);
      return to_host(out);
    };
    const auto z = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), outputs(s.right));
    const auto pr =
        Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), probabilities(s.right));
    const gradsum::Dataset right(s.right, s.y);
  const gradsum::Dataset left(s.left, s.y);
  const gradsum::Dataset strided(s.strided, s.y);
    const double accuracy = gradsum::accuracy(space, net, loss, theta, right);
    const double mean = gradsum::mean_loss(space, net, loss, theta, right);
    for (int which = 0; which < 2; ++which) {
      INFO((which == 0 ? "LayoutLeft" : "LayoutStride, column stride 2"));
      const auto zl = Kokkos::create_mirror_view_and_copy(
          Kokkos::HostSpace(), which == 0 ? outputs(s.left) : outputs(s.strided));
      const auto pl = Kokkos::create_mirror_view_and_copy(
          Kokkos::HostSpace(), which == 0 ? probabilities(s.left) : probabilities(s.strided));
      bool same = true;
      for (int i = 0; i < 29; ++i)
        for (int c = 0; c < 3; ++c) same = same && zl(i, c) == z(i, c) && pl(i, c) == pr(i, c);
      CHECK(same);
      CHECK((which == 0 ? classes(s.left) : classes(s.strided)) == classes(s.right));
      if (which == 0) {
        CHECK(gradsum::accuracy(space, net, loss, theta, left) == accuracy);
        CHECK(gradsum::mean_loss(space, net, loss, theta, left) == mean);
      } else {
        CHECK(gradsum::accuracy(space, net, loss, theta, strided) == accuracy);
        CHECK(gradsum::mean_loss(space, net, loss, theta, strided) == mean);
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(layouts_predict, Spaces);

TEST_CASE_TEMPLATE_DEFINE("layouts: rows too wide to gather are refused, or go layer by layer",
                          Space, layouts_gather_limit) {
  using Memory = typename Space::memory_space;
  const int d = gradsum::max_gathered_features + 1;
  const auto p = random_problem(3, d, Kind::regression, 1, 45);
  const auto s = same_numbers<Memory>(p);
  const gradsum::Dataset left(s.left, s.y);
  const Space space;
  const gradsum::Linear linear(d);
  Kokkos::View<double*, Memory> theta("theta", std::size_t(d + 1));
  auto step = gradsum::make_step<double>(space, linear, gradsum::SquaredError{});
  const std::string limit = gradsum::detail::concat(
      "the features' rows are not contiguous (LayoutLeft or strided) and have ", d,
      " values; a per-sample kernel gathers at most ", d - 1,
      " (GRADSUM_MAX_GATHERED_FEATURES): define it larger before including gradsum, take the "
      "layer-wise path, or copy the features with Dataset::copy_from");
  CHECK_THROWS_WITH_AS(step.evaluate(theta, left),
                       ("gradsum::Step::evaluate: " + limit).c_str(), gradsum::Error);
  Kokkos::View<double**, Memory> out("out", 3, 1);
  CHECK_THROWS_WITH_AS(gradsum::predict(space, linear, theta, s.left, out),
                       ("gradsum::predict: " + limit).c_str(), gradsum::Error);
  const gradsum::SquaredError squared;
  CHECK_THROWS_WITH_AS(gradsum::mean_loss(space, linear, squared, theta, left),
                       ("gradsum::mean_loss: " + limit).c_str(), gradsum::Error);
  // An MLP's layer-wise path and predictions gather panels: no limit.
  const gradsum::MLP net(d, {3}, 1, gradsum::Activation::tanh);
  Kokkos::View<double*, Memory> w("w", std::size_t(net.num_parameters()));
  fill(w, random_vector(std::size_t(net.num_parameters()), 14, 0.05));
  const gradsum::Dataset right(s.right, s.y);
  auto mlp_step = gradsum::make_step<double>(space, net, gradsum::SquaredError{});
  CHECK(gradient_at(mlp_step, w, left, left.all_rows()) ==
        gradient_at(mlp_step, w, right, right.all_rows()));
  // (LayoutRight's rows go per sample, LayoutLeft's layer by layer.)
  Kokkos::View<double**, Memory> zl("zl", 3, 1), zr("zr", 3, 1);
  gradsum::predict(space, net, w, s.left, zl);
  gradsum::predict(space, net, w, s.right, zr);
  CHECK(relative_distance(to_host(Kokkos::subview(zl, Kokkos::ALL(), 0)),
                          to_host(Kokkos::subview(zr, Kokkos::ALL(), 0))) <= 1e-13);
}
TEST_CASE_TEMPLATE_APPLY(layouts_gather_limit, Spaces);

TEST_CASE_TEMPLATE_DEFINE("MLP::forward_with in a kernel of one's own: storage for the network",
                          Space, mlp_forward_with) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(17, 4, Kind::regression, 1, 46);
  const auto s = same_numbers<Memory>(p);
  // Hidden layers of 9 and max_width + 40 units: forward() refuses the
  // second, forward_with() takes it in 2 x (max_width + 40) values.
  const int widest = gradsum::MLP::max_width + 40;
  const gradsum::MLP net(4, {9, widest}, 2, gradsum::Activation::tanh);
  CHECK(net.forward_workspace_size() == 2 * widest);
  CHECK(gradsum::MLP(4, {}, 2).forward_workspace_size() == 0);
  static_assert(std::is_trivially_copyable<gradsum::MLP>::value, "captured by value in kernels");
  Kokkos::View<double*, Memory> theta("theta", std::size_t(net.num_parameters()));
  fill(theta, random_vector(std::size_t(net.num_parameters()), 15, 0.2));
  Kokkos::View<double**, Memory> work("work", 17, std::size_t(net.forward_workspace_size()));
  Kokkos::View<double**, Memory> mine("mine", 17, 2), reference("reference", 17, 2);
  const auto x = s.right;
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, 17), KOKKOS_LAMBDA(int i) {
        double z[2];  // written by forward_with, not initialised here
        net.forward_with(theta.data(), &x(i, 0), z, &work(i, 0));
        for (int c = 0; c < 2; ++c) mine(i, c) = z[c];
      });
  gradsum::predict(Space(), net, theta, x, reference);  // layer by layer
  const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine);
  const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), reference);
  std::vector<double> va, vb;
  for (int i = 0; i < 17; ++i)
    for (int c = 0; c < 2; ++c) {
      va.push_back(a(i, c));
      vb.push_back(b(i, c));
    }
  CHECK(relative_distance(va, vb) <= 1e-13);
  // Within forward()'s room, forward() and forward_with() agree bit for bit.
  const gradsum::MLP small(4, {9, 5}, 2, gradsum::Activation::tanh);
  REQUIRE(small.forward_workspace_size() == 18);
  Kokkos::View<int*, Memory> differ("differ", 1);
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, 17), KOKKOS_LAMBDA(int i) {
        double z1[2], z2[2], room[18];  // 2 x 9: small.forward_workspace_size()
        small.forward(theta.data(), &x(i, 0), z1);
        small.forward_with(theta.data(), &x(i, 0), z2, room);
        if (z1[0] != z2[0] || z1[1] != z2[1]) Kokkos::atomic_add(&differ(0), 1);
      });
  CHECK(to_host(differ)[0] == 0);
}
TEST_CASE_TEMPLATE_APPLY(mlp_forward_with, Spaces);

TEST_CASE_TEMPLATE_DEFINE("layouts: check_model on LayoutLeft data reports as on LayoutRight",
                          Space, layouts_check_model) {
  using Memory = typename Space::memory_space;
  const auto p = random_problem(40, 4, Kind::multiclass, 3, 47);
  const auto s = same_numbers<Memory>(p);
  const gradsum::Dataset right(s.right, s.y);
  const gradsum::Dataset left(s.left, s.y);
  gradsum::CheckModelOptions options;
  options.rows = 8;
  options.seed = 5;
  const gradsum::MLP net(4, {5}, 3, gradsum::Activation::tanh);
  const auto on_right =
      gradsum::check_model(Space(), net, gradsum::SoftmaxCrossEntropy{}, right, options);
  const auto on_left =
      gradsum::check_model(Space(), net, gradsum::SoftmaxCrossEntropy{}, left, options);
  std::ostringstream a, b;
  a << on_right;
  b << on_left;
  INFO(b.str());
  CHECK(on_left.passed);
  CHECK(a.str() == b.str());
}
TEST_CASE_TEMPLATE_APPLY(layouts_check_model, Spaces);
