// SPDX-License-Identifier: Apache-2.0
// Dense and ActivationLayer alone: backward against central differences
// (every activation, with and without bias, widths 1, odd and over 64,
// panels of 1 and an odd number of rows), forward against a host loop,
// GELU's tanh form against its formula's values, the errors (MLP
// refuses gelu, bad widths and panel shapes), and Dense's report that its
// gradient is final before the product for din.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/activation_layer.hpp>
#include <gradsum/model/detail/backward_progress.hpp>
#include <gradsum/model/layers/dense.hpp>

#include <cmath>
#include <vector>

using gradsum::Activation;
using gradsum::ActivationLayer;
using gradsum::Dense;
using gradsum::Tokens;

namespace {

const Activation dense_test_activations[] = {Activation::identity, Activation::relu,
                                             Activation::tanh, Activation::sigmoid,
                                             Activation::gelu};

// f(z) in long double from the definitions, not from activation.hpp.
long double dense_test_reference(Activation f, long double z) {
  switch (f) {
    case Activation::relu: return z > 0 ? z : 0;
    case Activation::tanh: return std::tanh(z);
    case Activation::sigmoid: return 1 / (1 + std::exp(-z));
    case Activation::gelu: {
      const long double pi = 3.141592653589793238462643383279502884L;
      return z / 2 * (1 + std::tanh(std::sqrt(2 / pi) * (z + 0.044715L * z * z * z)));
    }
    case Activation::identity: break;
  }
  return z;
}

void dense_test_check(const gradsum_test::LayerErrors& e, bool inputs = true) {
  CHECK(e.parameters < 1e-7);
  if (inputs) CHECK(e.inputs < 1e-7);
  CHECK(e.accumulate < 1e-13);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("layer dense: backward against central differences", Space,
                          dense_differences) {
  const int shapes[][2] = {{1, 1}, {5, 3}, {3, 67}, {67, 2}};
  const Tokens panels[] = {{1, 1}, {3, 1}};  // every coordinate: keep the panels small
  std::uint64_t seed = 100;
  for (Activation f : dense_test_activations)
    for (bool bias : {true, false})
      for (const auto& s : shapes)
        for (const Tokens& t : panels)
          dense_test_check(gradsum_test::check_layer<Space>(Dense(s[0], s[1], f, bias), t, ++seed));
}
TEST_CASE_TEMPLATE_APPLY(dense_differences, gradsum_test::Spaces);

TEST_CASE_TEMPLATE_DEFINE("layer dense: the first layer (no din) adds the same dL/dtheta", Space,
                          dense_first) {
  for (Activation f : {Activation::tanh, Activation::gelu})
    dense_test_check(gradsum_test::check_layer<Space>(Dense(4, 7, f), Tokens{2, 3}, 7, {}, false),
                     false);
}
TEST_CASE_TEMPLATE_APPLY(dense_first, gradsum_test::Spaces);

TEST_CASE_TEMPLATE_DEFINE("layer dense: forward is f(in W^T + b), PyTorch's layout", Space,
                          dense_forward) {
  using Memory = typename Space::memory_space;
  const int n_in = 3, n_out = 66;
  const Tokens t{1, 5};
  for (Activation f : dense_test_activations)
    for (bool bias : {true, false}) {
      const Dense layer(n_in, n_out, f, bias);
      const auto theta = gradsum_test::random_vector(std::size_t(layer.num_parameters()), 3, 1.0);
      const auto x = gradsum_test::random_vector(std::size_t(t.rows() * n_in), 4, 1.0);
      Kokkos::View<double*, Memory> th("theta", theta.size()), in("in", x.size()),
          out("out", std::size_t(t.rows() * n_out)), work("work", layer.workspace_size(t));
      gradsum_test::detail::from_host(th, theta);
      gradsum_test::detail::from_host(in, x);
      layer.forward(Space(), th.data(), t, gradsum::LayerInput<double, Memory>(in.data(), 5, n_in),
                    gradsum::LayerOutput<double, Memory>(out.data(), 5, n_out), work.data());
      const auto got = gradsum_test::detail::to_host(out);
      double worst = 0;
      for (int r = 0; r < 5; ++r)
        for (int o = 0; o < n_out; ++o) {
          long double z = bias ? theta[std::size_t(n_in * n_out + o)] : 0;
          for (int i = 0; i < n_in; ++i)
            z += (long double)theta[std::size_t(o * n_in + i)] * x[std::size_t(r * n_in + i)];
          worst = std::fmax(worst, std::fabs(double(got[std::size_t(r * n_out + o)] -
                                                    dense_test_reference(f, z))));
        }
      INFO(layer.describe());
      CHECK(worst < 1e-13);
    }
}
TEST_CASE_TEMPLATE_APPLY(dense_forward, gradsum_test::Spaces);

TEST_CASE_TEMPLATE_DEFINE("layer activation: backward against central differences", Space,
                          activation_differences) {
  const Tokens panels[] = {{1, 1}, {1, 3}};
  std::uint64_t seed = 200;
  for (Activation f : dense_test_activations)
    for (int width : {1, 5, 67})
      for (const Tokens& t : panels) {
        const auto e = gradsum_test::check_layer<Space>(ActivationLayer(width, f), t, ++seed);
        CHECK(e.inputs < 1e-7);
      }
}
TEST_CASE_TEMPLATE_APPLY(activation_differences, gradsum_test::Spaces);

TEST_CASE("layer activation: gelu is the tanh form (values from its formula)") {
  // Values of z/2 (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))), evaluated apart.
  const double table[][2] = {{-3.0, -0.0036373920817729943},
                             {-1.0, -0.15880800939172324},
                             {-0.5, -0.15428599017485606},
                             {0.1, 0.053982751045435165},
                             {1.0, 0.8411919906082768},
                             {2.5, 2.484915733910001},
                             {0.0, 0.0}};
  for (const auto& zv : table) {
    INFO("z = " << zv[0]);
    CHECK(gradsum::detail::activate(Activation::gelu, zv[0]) ==
          doctest::Approx(zv[1]).epsilon(1e-14));
    CHECK(double(gradsum::detail::activate(Activation::gelu, float(zv[0]))) ==
          doctest::Approx(zv[1]).epsilon(1e-6));
  }
  // The tanh form is within 4.8e-4 of the exact z Phi(z) everywhere.
  for (int k = -800; k <= 800; ++k) {
    const double z = k / 100.0;
    CHECK(std::fabs(gradsum::detail::activate(Activation::gelu, z) -
                    z / 2 * (1 + std::erf(z / std::sqrt(2.0)))) < 4.8e-4);
  }
  // Far out it is the identity and 0 (the tanh saturates, no NaN).
  CHECK(gradsum::detail::activate(Activation::gelu, 40.0) == 40.0);
  CHECK(gradsum::detail::activate(Activation::gelu, -40.0) == 0.0);
  CHECK(gradsum::detail::activation_slope_at(Activation::gelu, 40.0) == 1.0);
  CHECK(gradsum::detail::activation_slope_at(Activation::gelu, -40.0) == 0.0);
}

TEST_CASE("layer dense: names, shapes and errors") {
  CHECK(gradsum::parse_activation("gelu") == Activation::gelu);
  CHECK(std::string(gradsum::activation_name(Activation::gelu)) == "gelu");
  CHECK(Dense(128, 512, Activation::gelu).describe() == "dense(128,512,gelu)");
  CHECK(Dense(64, 65, Activation::identity, false).describe() == "dense(64,65,identity,nobias)");
  CHECK(Dense(4, 3).num_parameters() == 15);
  CHECK(Dense(4, 3, Activation::identity, false).num_parameters() == 12);
  // delta (unless identity), z and tanh(u) (gelu) and a one, per row.
  CHECK(Dense(4, 3, Activation::identity, false).workspace_size(Tokens{2, 5}) == 0);
  CHECK(Dense(4, 3, Activation::identity).workspace_size(Tokens{2, 5}) == 10);
  CHECK(Dense(4, 3, Activation::tanh).workspace_size(Tokens{2, 5}) == 40);
  CHECK(Dense(4, 3, Activation::gelu).workspace_size(Tokens{2, 5}) == 100);
  CHECK(ActivationLayer(9, Activation::gelu).describe() == "activation(9,gelu)");
  CHECK_THROWS_WITH_AS(Dense(0, 3),
                       "gradsum::Dense: inputs and outputs must be at least 1, got 0 and 3",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(Dense(70000, 70000),
                       doctest::Contains("70000 x 70000 has more parameters than an int holds"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(ActivationLayer(0, Activation::relu),
                       "gradsum::ActivationLayer: width must be at least 1, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::parse_activation("swish"),
                       doctest::Contains("choose identity, relu, tanh, sigmoid or gelu"),
                       gradsum::Error);
  // The MLP keeps only the activation's value, which does not give gelu's slope.
  CHECK_THROWS_WITH_AS(gradsum::MLP(3, {4, 5}, 1, {Activation::tanh, Activation::gelu}),
                       doctest::Contains("gradsum::MLP: hidden layer 2 has activation gelu"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::MLP::from_description("3-4(gelu)-1"),
                       doctest::Contains("has activation gelu"), gradsum::Error);

  using Host = Kokkos::DefaultHostExecutionSpace;
  using Memory = Host::memory_space;
  std::vector<double> theta(15), x(8), y(6);
  CHECK_THROWS_WITH_AS(
      Dense(4, 3).forward(
          Host(), theta.data(), Tokens{1, 2}, gradsum::LayerInput<double, Memory>(x.data(), 2, 4),
          gradsum::LayerOutput<double, Memory>(y.data(), 3, 2), static_cast<double*>(nullptr)),
      "gradsum::Dense::forward: out is 3 x 2; expected 2 x 3 (the panel's rows x the layer's "
      "width)",
      gradsum::Error);
}

namespace {

// Dense's forward and backward in Scalar on the panel t at fixed random
// values (dout too); returns out, g and din, in double.
template <class Space, class Scalar>
std::vector<std::vector<double>> dense_test_pass(const Dense& layer, Tokens t) {
  using Memory = typename Space::memory_space;
  using Vector = Kokkos::View<Scalar*, Memory>;
  const auto rows = std::size_t(t.rows());
  const auto n_in = std::size_t(layer.inputs()), n_out = std::size_t(layer.outputs());
  auto filled = [](std::size_t n, std::uint64_t seed) {
    Vector v("v", n);
    auto h = Kokkos::create_mirror_view(v);
    const auto values = gradsum_test::random_vector(n, seed);
    for (std::size_t i = 0; i < n; ++i) h(i) = Scalar(values[i]);
    Kokkos::deep_copy(v, h);
    return v;
  };
  const Vector theta = filled(std::size_t(layer.num_parameters()), 11),
               in = filled(rows * n_in, 12), dout = filled(rows * n_out, 13),
               out("out", rows * n_out), g("g", std::size_t(layer.num_parameters())),
               din("din", rows * n_in), work("work", layer.workspace_size(t));
  using CMatrix = gradsum::LayerInput<Scalar, Memory>;
  using Matrix = gradsum::LayerOutput<Scalar, Memory>;
  layer.forward(Space(), theta.data(), t, CMatrix(in.data(), rows, n_in),
                Matrix(out.data(), rows, n_out), work.data());
  layer.backward(Space(), theta.data(), t, CMatrix(in.data(), rows, n_in),
                 CMatrix(out.data(), rows, n_out), CMatrix(dout.data(), rows, n_out), g.data(),
                 Matrix(din.data(), rows, n_in), work.data());
  std::vector<std::vector<double>> result;
  for (const Vector& v : {out, g, din}) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    result.emplace_back(h.data(), h.data() + h.extent(0));
  }
  return result;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("layer dense: float gives double's values to float's precision", Space,
                          dense_float) {
  for (Activation f : dense_test_activations) {
    const Dense layer(9, 70, f);
    INFO(layer.describe());
    const auto in_float = dense_test_pass<Space, float>(layer, Tokens{3, 3});
    const auto in_double = dense_test_pass<Space, double>(layer, Tokens{3, 3});
    for (std::size_t k = 0; k < in_float.size(); ++k) {
      INFO("out, g, din: " << k);
      CHECK(gradsum_test::detail::relative_error(in_float[k], in_double[k]) < 1e-6);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(dense_float, gradsum_test::Spaces);

TEST_CASE_TEMPLATE_DEFINE("layer dense: an empty panel adds nothing", Space, dense_empty) {
  using Memory = typename Space::memory_space;
  for (bool bias : {true, false}) {
    const Dense layer(3, 4, Activation::gelu, bias);
    const Tokens t{0, 1};
    CHECK(layer.workspace_size(t) == 0);
    const auto before = gradsum_test::random_vector(std::size_t(layer.num_parameters()), 5);
    Kokkos::View<double*, Memory> theta("theta", before.size()), g("g", before.size());
    gradsum_test::detail::from_host(g, before);
    const gradsum::LayerInput<double, Memory> none(nullptr, 0, 3), none_out(nullptr, 0, 4);
    layer.forward(Space(), theta.data(), t, none,
                  gradsum::LayerOutput<double, Memory>(nullptr, 0, 4),
                  static_cast<double*>(nullptr));
    layer.backward(Space(), theta.data(), t, none, none_out, none_out, g.data(),
                   gradsum::LayerOutput<double, Memory>(nullptr, 0, 3),
                   static_cast<double*>(nullptr));
    Space().fence();
    CHECK(gradsum_test::detail::to_host(g) == before);
  }
}
TEST_CASE_TEMPLATE_APPLY(dense_empty, gradsum_test::Spaces);

// No atomics: a host space with any number of threads gives Serial's bits
// (the two-thread suite runs OpenMP on two), the sums over rows included.
// The products stay below the size that OpenMP cuts into slices of rows
// for the BLAS (2^20 multiply-adds), so both spaces make the same BLAS
// calls and what is compared is the layer's own kernels: a BLAS's bits
// change with the threads it runs on (linalg/detail/host_blas.hpp).
TEST_CASE_TEMPLATE_DEFINE("layer dense: the same bits as Serial on host spaces", Space,
                          dense_same_bits) {
#ifdef KOKKOS_ENABLE_SERIAL
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Space::memory_space>::accessible) {
    for (Activation f : {Activation::identity, Activation::gelu}) {
      const Dense layer(33, 50, f);
      INFO(layer.describe());
      const Tokens t{9, 57};  // 513 rows
      static_assert(513 * 33 * 50 < gradsum::detail::blas_slice_min_work);
      CHECK(dense_test_pass<Space, double>(layer, t) ==
            dense_test_pass<Kokkos::Serial, double>(layer, t));
    }
  }
#endif
}
TEST_CASE_TEMPLATE_APPLY(dense_same_bits, gradsum_test::Spaces);

// What a listener sees at each report: where the final part begins, and
// g and din as they are then (the space fenced first, as a bucketed sum
// does before it reads).
template <class Space>
struct DenseTestWatch final : gradsum::detail::BackwardListener {
  using Vector = Kokkos::View<double*, typename Space::memory_space>;
  Vector g, din;
  std::vector<const void*> from;
  std::vector<std::vector<double>> g_then, din_then;
  DenseTestWatch(Vector g_, Vector din_) : g(g_), din(din_) {}
  void final_from(const void* first) override {
    Space().fence();
    from.push_back(first);
    g_then.push_back(gradsum_test::detail::to_host(g));
    din_then.push_back(gradsum_test::detail::to_host(din));
  }
};

// A bucketed sum starts sending a layer's gradient when it is reported
// final: Dense reports it once dW and db are added, before the product
// for din, which then still holds what it held; the values reported are
// the ones the backward pass ends with. Without din it leaves the report
// to its composition.
TEST_CASE_TEMPLATE_DEFINE("layer dense: the gradient is reported final before din's product",
                          Space, dense_reports_final) {
  for (bool with_din : {true, false}) {
    INFO("din " << with_din);
    const Dense layer(5, 7, Activation::tanh);
    gradsum_test::detail::LayerRun<Space, Dense> run(layer, Tokens{3, 4});
    const std::size_t rows = std::size_t(run.t.rows());
    gradsum_test::detail::from_host(
        run.theta, gradsum_test::random_vector(std::size_t(layer.num_parameters()), 3));
    gradsum_test::detail::from_host(run.in, gradsum_test::random_vector(rows * 5, 4));
    gradsum_test::detail::from_host(run.dout, gradsum_test::random_vector(rows * 7, 5));
    const std::vector<double> marked(rows * 5, 123.0);
    gradsum_test::detail::from_host(run.din, marked);
    run.forward();
    DenseTestWatch<Space> watch(run.g, run.din);
    {
      const gradsum::detail::ScopedBackwardListener listening(&watch);
      run.backward(with_din);
    }
    if (!with_din) {
      CHECK(watch.from.empty());
      continue;
    }
    REQUIRE(watch.from.size() == 1);
    CHECK(watch.from[0] == static_cast<const void*>(run.g.data()));
    CHECK(watch.g_then[0] == gradsum_test::detail::to_host(run.g));
    CHECK(watch.din_then[0] == marked);
    CHECK(gradsum_test::detail::to_host(run.din) != marked);
  }
}
TEST_CASE_TEMPLATE_APPLY(dense_reports_final, gradsum_test::Spaces);
