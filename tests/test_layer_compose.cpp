// SPDX-License-Identifier: Apache-2.0
// The compositions (Sequential, Residual, Repeated) against central
// differences, built from three small layers of this file's own: a
// matrix that keeps its input in its workspace (so a composition that
// overwrote a layer's workspace between forward and backward is caught),
// an elementwise tanh whose backward reads its output (so a wrong `out`
// is caught) and a per-column scale and shift.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/repeated.hpp>
#include <gradsum/model/layers/residual.hpp>
#include <gradsum/model/layers/sequential.hpp>

#include <string>

using gradsum::LayerInput;
using gradsum::LayerOutput;
using gradsum::Tokens;

// Named, not anonymous: the unity build puts several test files in one
// batch, and anonymous namespaces there are one namespace.
namespace compose_test {

template <class Space>
using Rows = Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>;

// out = W in, W [n_out, n_in]; a copy of `in` kept in the workspace and
// read back by backward instead of `in`.
struct Mix {
  int n_in = 1, n_out = 1;
  int num_parameters() const { return n_in * n_out; }
  int input_width() const { return n_in; }
  int output_width() const { return n_out; }
  std::size_t workspace_size(Tokens t) const { return std::size_t(t.rows()) * std::size_t(n_in); }
  std::string describe() const { return "mix(" + std::to_string(n_in) + "," + std::to_string(n_out) + ")"; }
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* w, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar* work) const {
    const int a = n_in, b = n_out;
    Kokkos::parallel_for("test::mix::forward", Rows<Space>(space, 0, t.rows()),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < a; ++j) work[r * a + j] = in(r, j);
                           for (int o = 0; o < b; ++o) {
                             Scalar s = 0;
                             for (int j = 0; j < a; ++j) s += w[o * a + j] * in(r, j);
                             out(r, o) = s;
                           }
                         });
  }
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* w, Tokens t, LayerInput<Scalar, Memory>,
                LayerInput<Scalar, Memory>, LayerInput<Scalar, Memory> dout, Scalar* g,
                LayerOutput<Scalar, Memory> din, Scalar* work) const {
    const int a = n_in, b = n_out;
    const std::int64_t rows = t.rows();
    Kokkos::parallel_for("test::mix::weights", Rows<Space>(space, 0, std::int64_t(a) * b),
                         KOKKOS_LAMBDA(std::int64_t k) {
                           const std::int64_t o = k / a, j = k % a;
                           Scalar s = 0;
                           for (std::int64_t r = 0; r < rows; ++r) s += dout(r, o) * work[r * a + j];
                           g[k] += s;
                         });
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("test::mix::input", Rows<Space>(space, 0, rows),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < a; ++j) {
                             Scalar s = 0;
                             for (int o = 0; o < b; ++o) s += dout(r, o) * w[o * a + j];
                             din(r, j) = s;
                           }
                         });
  }
};

// out = tanh(in); backward through the output: 1 - out^2.
struct Tanh {
  int width = 1;
  int num_parameters() const { return 0; }
  int input_width() const { return width; }
  int output_width() const { return width; }
  std::size_t workspace_size(Tokens) const { return 0; }
  std::string describe() const { return "tanh"; }
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar*, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar*) const {
    const int n = width;
    Kokkos::parallel_for("test::tanh::forward", Rows<Space>(space, 0, t.rows()),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j) out(r, j) = gradsum::math::tanh(in(r, j));
                         });
  }
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar*, Tokens t, LayerInput<Scalar, Memory>,
                LayerInput<Scalar, Memory> out, LayerInput<Scalar, Memory> dout, Scalar*,
                LayerOutput<Scalar, Memory> din, Scalar*) const {
    if (din.data() == nullptr) return;
    const int n = width;
    Kokkos::parallel_for("test::tanh::backward", Rows<Space>(space, 0, t.rows()),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j)
                             din(r, j) = dout(r, j) * (Scalar(1) - out(r, j) * out(r, j));
                         });
  }
};

// out = a * in + b per column; parameters a then b.
struct Affine {
  int width = 1;
  int num_parameters() const { return 2 * width; }
  int input_width() const { return width; }
  int output_width() const { return width; }
  std::size_t workspace_size(Tokens) const { return 0; }
  std::string describe() const { return "affine"; }
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* p, Tokens t, LayerInput<Scalar, Memory> in,
               LayerOutput<Scalar, Memory> out, Scalar*) const {
    const int n = width;
    Kokkos::parallel_for("test::affine::forward", Rows<Space>(space, 0, t.rows()),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j) out(r, j) = p[j] * in(r, j) + p[n + j];
                         });
  }
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* p, Tokens t, LayerInput<Scalar, Memory> in,
                LayerInput<Scalar, Memory>, LayerInput<Scalar, Memory> dout, Scalar* g,
                LayerOutput<Scalar, Memory> din, Scalar*) const {
    const int n = width;
    const std::int64_t rows = t.rows();
    Kokkos::parallel_for("test::affine::parameters", Rows<Space>(space, 0, n),
                         KOKKOS_LAMBDA(std::int64_t j) {
                           Scalar da = 0, db = 0;
                           for (std::int64_t r = 0; r < rows; ++r) {
                             da += dout(r, j) * in(r, j);
                             db += dout(r, j);
                           }
                           g[j] += da;
                           g[n + j] += db;
                         });
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("test::affine::input", Rows<Space>(space, 0, rows),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j) din(r, j) = p[j] * dout(r, j);
                         });
  }
};

// Relative errors this small are rounding: central differences of step
// 1e-6 in double.
constexpr double tolerance = 1e-7;

template <class Space, class Layer>
void check(const Layer& layer, Tokens t, std::uint64_t seed) {
  const auto e = gradsum_test::check_layer<Space>(layer, t, seed);
  CHECK(e.parameters < tolerance);
  CHECK(e.inputs < tolerance);
  CHECK(e.accumulate < 1e-10);
}

TEST_CASE_TEMPLATE_DEFINE("layers: Sequential, Residual and Repeated against central differences",
                          Space, layer_compositions) {
  // The test layers alone first: the checker's own baseline.
  check<Space>(Mix{3, 4}, Tokens{2, 3}, 1);
  check<Space>(Tanh{3}, Tokens{1, 5}, 2);
  check<Space>(Affine{3}, Tokens{3, 1}, 3);

  const gradsum::Sequential<Mix, Tanh, Affine, Mix> chain(Mix{3, 5}, Tanh{5}, Affine{5}, Mix{5, 2});
  CHECK(chain.num_parameters() == 15 + 10 + 10);
  CHECK(chain.describe() == "sequential(mix(3,5), tanh, affine, mix(5,2))");
  for (const Tokens t : {Tokens{1, 1}, Tokens{2, 3}, Tokens{5, 7}}) check<Space>(chain, t, 4);

  const gradsum::Sequential<Mix> single(Mix{2, 3});
  check<Space>(single, Tokens{3, 2}, 5);

  using Block = gradsum::Residual<gradsum::Sequential<Affine, Tanh, Mix>>;
  const Block block(gradsum::Sequential<Affine, Tanh, Mix>(Affine{4}, Tanh{4}, Mix{4, 4}));
  check<Space>(block, Tokens{2, 3}, 6);

  // Three blocks with parameters of their own, between two other layers.
  const gradsum::Repeated<Block> blocks(3, block);
  CHECK(blocks.num_parameters() == 3 * block.num_parameters());
  check<Space>(blocks, Tokens{2, 5}, 7);
  const gradsum::Sequential<Mix, gradsum::Repeated<Block>, Mix> net(Mix{3, 4}, blocks, Mix{4, 2});
  check<Space>(net, Tokens{3, 4}, 8);
  check<Space>(gradsum::Repeated<Mix>(1, Mix{3, 3}), Tokens{2, 2}, 9);
}
TEST_CASE_TEMPLATE_APPLY(layer_compositions, gradsum_test::Spaces);

TEST_CASE("layers: compositions whose widths do not fit are errors that name the layers") {
  using Chain = gradsum::Sequential<Mix, Mix>;
  CHECK_THROWS_WITH_AS(Chain(Mix{3, 4}, Mix{5, 2}),
                       doctest::Contains("layer 0 (mix(3,4)) gives 4 values per row but layer 1 (mix(5,2)) takes 5"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::Residual<Mix>(Mix{3, 4}),
                       doctest::Contains("mix(3,4) takes 3 values per row and gives 4"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::Repeated<Mix>(0, Mix{3, 3}),
                       doctest::Contains("0 copies of mix(3,3); expected 1 or more"), gradsum::Error);
  CHECK_THROWS_AS(gradsum::Repeated<Mix>(2, Mix{3, 2}), gradsum::Error);
}

}  // namespace compose_test
