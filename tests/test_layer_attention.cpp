// SPDX-License-Identifier: Apache-2.0
// SelfAttention: its backward against central differences (context 1, odd
// contexts, one head and several, the causal mask on and off, heads wide
// and windows long enough for the kernels' register blocks and their
// tails), outputs against closed forms of small cases worked by hand and
// against the definition computed plainly, the causal mask's promise that
// a token never sees later ones, and its errors.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/attention.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

using namespace gradsum_test;

namespace {

// The layer's forward on host values `in` (rows x 3C), as doubles.
template <class Space, class Scalar>
std::vector<double> attention_outputs(const gradsum::SelfAttention& layer, gradsum::Tokens t,
                                      const std::vector<double>& in) {
  using Memory = typename Space::memory_space;
  const auto rows = std::size_t(t.rows());
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> x("x", rows, 3 * layer.width()),
      y("y", rows, layer.width());
  Kokkos::View<Scalar*, Memory> work("work", layer.workspace_size(t));
  auto hx = Kokkos::create_mirror_view(x);
  for (std::size_t r = 0; r < rows; ++r)
    for (int j = 0; j < 3 * layer.width(); ++j) hx(r, j) = Scalar(in[r * 3 * layer.width() + j]);
  Kokkos::deep_copy(x, hx);
  layer.forward(Space(), static_cast<const Scalar*>(nullptr), t,
                gradsum::LayerInput<Scalar, Memory>(x.data(), rows, 3 * layer.width()),
                gradsum::LayerOutput<Scalar, Memory>(y.data(), rows, layer.width()),
                work.data());
  Space().fence();
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  return std::vector<double>(hy.data(), hy.data() + hy.size());
}

// Two tokens, one head of width 2 (scale 1/sqrt 2): q1 . k1 / sqrt 2 =
// ln 3 and q1 . k0 = 0, so query 1 weighs v0 and v1 by 1/4 and 3/4.
// Rows: q (2), k (2), v (2).
const std::vector<double> attention_two_tokens = {
    0.3, -0.7, 0, 0, 1, 2,  // token 0
    1, 1, std::log(3.0) / std::sqrt(2.0), std::log(3.0) / std::sqrt(2.0), 5, -2};  // token 1

template <class Space, class Scalar>
void check_attention_pair(double tolerance) {
  using gradsum::SelfAttention;
  const gradsum::Tokens t{1, 2};
  const auto causal =
      attention_outputs<Space, Scalar>(SelfAttention(2, 1, true), t, attention_two_tokens);
  // Query 0 sees only key 0: out0 = v0. Query 1: v0 / 4 + 3 v1 / 4.
  const std::vector<double> want = {1, 2, 4, -1};
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK(causal[i] == doctest::Approx(want[i]).epsilon(tolerance));
  // Without the mask query 0 sees key 1 too: q0 . k1 / sqrt 2 = -0.2 ln 3.
  const auto full =
      attention_outputs<Space, Scalar>(SelfAttention(2, 1, false), t, attention_two_tokens);
  const double p01 = std::pow(3.0, -0.2) / (1 + std::pow(3.0, -0.2));
  const std::vector<double> want_full = {(1 - p01) * 1 + p01 * 5, (1 - p01) * 2 + p01 * -2, 4, -1};
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK(full[i] == doctest::Approx(want_full[i]).epsilon(tolerance));
}

// Two heads of width 2 on C = 4: head 0 as above, head 1 with
// q1 . k1 / sqrt 2 = ln 7 (weights 1/8, 7/8); the scale is 1/sqrt(C/H),
// not 1/sqrt(C), and head 1's output lands in columns 2 and 3.
template <class Space, class Scalar>
void check_attention_two_heads(double tolerance) {
  const double a = std::log(3.0) / std::sqrt(2.0), r2 = std::sqrt(2.0);
  const std::vector<double> in = {
      // q (head 0, head 1)   k (head 0, head 1)   v (head 0, head 1)
      0.3, -0.7, 9, 9,        0, 0, 0, 1,          1, 2, 8, 0,
      1, 1, r2, 0,            a, a, std::log(7.0), 5,  5, -2, 0, 8};
  const auto out =
      attention_outputs<Space, Scalar>(gradsum::SelfAttention(4, 2), gradsum::Tokens{1, 2}, in);
  const std::vector<double> want = {1, 2, 8, 0, 4, -1, 1, 7};
  for (std::size_t i = 0; i < want.size(); ++i)
    CHECK(out[i] == doctest::Approx(want[i]).epsilon(tolerance));
}

// Scores 1000 and 990 (width 1): exp(1000) overflows, so only a softmax
// that subtracts the maximum gives the weights 1/(1+e^-10), e^-10/(1+e^-10).
template <class Space, class Scalar>
void check_attention_large_scores(double tolerance) {
  const std::vector<double> in = {0, 1, 3, 1000, 0.99, -1};
  const auto out =
      attention_outputs<Space, Scalar>(gradsum::SelfAttention(1, 1), gradsum::Tokens{1, 2}, in);
  const double small = std::exp(-10.0) / (1 + std::exp(-10.0));
  CHECK(out[0] == doctest::Approx(3).epsilon(tolerance));
  CHECK(out[1] == doctest::Approx(3 * (1 - small) - small).epsilon(tolerance));
}

std::vector<double> attention_panel(std::int64_t rows, int columns, std::uint64_t seed) {
  return random_vector(std::size_t(rows * columns), seed, 1.0);
}

// The definition, one (window, head, query) at a time in long double: the
// scores q . k / sqrt(d) of the keys the query sees, their softmax, and
// the weighted sum of the values. Rows of `in`: q, k, v (C each).
std::vector<double> attention_by_definition(int width, int heads, bool causal, gradsum::Tokens t,
                                            const std::vector<double>& in) {
  const int d = width / heads, length = t.length;
  const auto at = [&](std::int64_t row, int column) {
    return static_cast<long double>(in[std::size_t(row * 3 * width + column)]);
  };
  std::vector<double> out(std::size_t(t.rows() * width));
  for (std::int64_t s = 0; s < t.sequences; ++s)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < length; ++i) {
        const std::int64_t row = s * length + i;
        const int keys = causal ? i + 1 : length;
        std::vector<long double> score(std::size_t(keys), 0);
        long double top = -1e300L, total = 0;
        for (int j = 0; j < keys; ++j) {
          for (int c = 0; c < d; ++c)
            score[std::size_t(j)] += at(row, h * d + c) * at(s * length + j, width + h * d + c);
          score[std::size_t(j)] /= std::sqrt(static_cast<long double>(d));
          top = std::max(top, score[std::size_t(j)]);
        }
        for (auto& e : score) total += (e = std::exp(e - top));
        for (int c = 0; c < d; ++c) {
          long double sum = 0;
          for (int j = 0; j < keys; ++j)
            sum += score[std::size_t(j)] / total * at(s * length + j, 2 * width + h * d + c);
          out[std::size_t(row * width + h * d + c)] = double(sum);
        }
      }
  return out;
}


// Forward then backward on `in` (rows x 3C) and `dout` (rows x C): the
// output and the input's gradient, as doubles.
template <class Space>
std::pair<std::vector<double>, std::vector<double>> attention_gradients(
    const gradsum::SelfAttention& layer, gradsum::Tokens t, const std::vector<double>& in,
    const std::vector<double>& dout) {
  using Memory = typename Space::memory_space;
  using Matrix = Kokkos::View<double**, Kokkos::LayoutRight, Memory>;
  const auto rows = std::size_t(t.rows());
  const auto c = std::size_t(layer.width());
  Matrix x("x", rows, 3 * c), y("y", rows, c), dy("dy", rows, c), dx("dx", rows, 3 * c);
  Kokkos::View<double*, Memory> work("work", layer.workspace_size(t));
  Kokkos::deep_copy(x, Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                           in.data(), rows, 3 * c));
  Kokkos::deep_copy(dy, Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                            dout.data(), rows, c));
  using In = gradsum::LayerInput<double, Memory>;
  layer.forward(Space(), static_cast<const double*>(nullptr), t, In(x.data(), rows, 3 * c),
                gradsum::LayerOutput<double, Memory>(y.data(), rows, c), work.data());
  layer.backward(Space(), static_cast<const double*>(nullptr), t, In(x.data(), rows, 3 * c),
                 In(y.data(), rows, c), In(dy.data(), rows, c), static_cast<double*>(nullptr),
                 gradsum::LayerOutput<double, Memory>(dx.data(), rows, 3 * c), work.data());
  Space().fence();
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dx);
  return {std::vector<double>(hy.data(), hy.data() + hy.size()),
          std::vector<double>(hx.data(), hx.data() + hx.size())};
}
}  // namespace

TEST_CASE_TEMPLATE_DEFINE("attention: backward against central differences", Space,
                          attention_differences) {
  std::uint64_t seed = 4100;
  for (const bool causal : {true, false})
    for (const int heads : {1, 2, 3})
      for (const int length : {1, 5, 7}) {
        const gradsum::SelfAttention layer(heads == 1 ? 4 : 6, heads, causal);
        const auto e = check_layer<Space>(layer, gradsum::Tokens{2, length}, ++seed);
        CHECK(e.inputs < 1e-7);
        CHECK(e.parameters == 0);
        CHECK(e.accumulate == 0);
      }
  // Heads of width 16 and 33 (a register block of columns, and one column
  // more), windows of 35 and 9 tokens (blocks of rows and of keys, and
  // what is left of each): every row, key and column of a block path.
  for (const bool causal : {true, false}) {
    const auto wide = check_layer<Space>(gradsum::SelfAttention(32, 2, causal),
                                         gradsum::Tokens{1, 35}, ++seed);
    CHECK(wide.inputs < 1e-7);
    CHECK(wide.accumulate == 0);
    const auto odd = check_layer<Space>(gradsum::SelfAttention(33, 1, causal),
                                        gradsum::Tokens{2, 9}, ++seed);
    CHECK(odd.inputs < 1e-7);
  }
  // Heads of width 1 and 5, three windows.
  for (const int width : {3, 10}) {
    const auto e = check_layer<Space>(gradsum::SelfAttention(width, width == 3 ? 3 : 2),
                                      gradsum::Tokens{3, 4}, ++seed);
    CHECK(e.inputs < 1e-7);
  }
}
TEST_CASE_TEMPLATE_APPLY(attention_differences, Spaces);

TEST_CASE_TEMPLATE_DEFINE("attention: two tokens against their closed form", Space,
                          attention_closed_form) {
  check_attention_pair<Space, double>(1e-14);
  check_attention_pair<Space, float>(1e-6);
  check_attention_two_heads<Space, double>(1e-14);
  check_attention_two_heads<Space, float>(1e-6);
  check_attention_large_scores<Space, double>(1e-14);
  check_attention_large_scores<Space, float>(1e-6);
}
TEST_CASE_TEMPLATE_APPLY(attention_closed_form, Spaces);

TEST_CASE_TEMPLATE_DEFINE("attention: outputs equal the definition computed plainly", Space,
                          attention_definition) {
  // Window lengths around the blocks of 4 rows and 32 keys, heads of
  // width 16, 32 and 3.
  struct Shape {
    int width, heads;
    gradsum::Tokens t;
  };
  std::uint64_t seed = 4150;
  for (const Shape& shape : {Shape{32, 2, {2, 37}}, Shape{64, 2, {1, 70}}, Shape{6, 2, {3, 5}}})
    for (const bool causal : {true, false}) {
      INFO("width " << shape.width << ", heads " << shape.heads << ", " << shape.t.sequences
                    << " x " << shape.t.length << ", causal " << causal);
      const auto in = attention_panel(shape.t.rows(), 3 * shape.width, ++seed);
      const auto got = attention_outputs<Space, double>(
          gradsum::SelfAttention(shape.width, shape.heads, causal), shape.t, in);
      const auto want =
          attention_by_definition(shape.width, shape.heads, causal, shape.t, in);
      double worst = 0;
      for (std::size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
      CHECK(worst < 1e-13);
    }
}
TEST_CASE_TEMPLATE_APPLY(attention_definition, Spaces);

TEST_CASE_TEMPLATE_DEFINE("attention: a window of one token gives its value", Space,
                          attention_context_one) {
  const gradsum::Tokens t{5, 1};
  const auto in = attention_panel(t.rows(), 3 * 6, 4141);
  for (const bool causal : {true, false}) {
    const auto out = attention_outputs<Space, double>(gradsum::SelfAttention(6, 2, causal), t, in);
    for (std::int64_t r = 0; r < t.rows(); ++r)
      for (int j = 0; j < 6; ++j)
        CHECK(out[std::size_t(r * 6 + j)] == in[std::size_t(r * 18 + 12 + j)]);
  }
}
TEST_CASE_TEMPLATE_APPLY(attention_context_one, Spaces);

TEST_CASE_TEMPLATE_DEFINE("attention: later tokens change no causal output before them", Space,
                          attention_causal) {
  const int width = 6, length = 7;
  const gradsum::Tokens t{2, length};
  const auto in = attention_panel(t.rows(), 3 * width, 4142);
  for (const bool causal : {true, false}) {
    INFO("causal " << causal);
    const gradsum::SelfAttention layer(width, 3, causal);
    const auto before = attention_outputs<Space, double>(layer, t, in);
    for (int position = 0; position + 1 < length; ++position) {
      INFO("tokens after position " << position << " of window 0 changed");
      auto changed = in;
      for (int i = position + 1; i < length; ++i)
        for (int j = 0; j < 3 * width; ++j) changed[std::size_t(i * 3 * width + j)] += 0.5;
      const auto after = attention_outputs<Space, double>(layer, t, changed);
      bool earlier_same = true, window_1_same = true;
      for (int i = 0; i <= position; ++i)
        for (int j = 0; j < width; ++j)
          earlier_same &= after[std::size_t(i * width + j)] == before[std::size_t(i * width + j)];
      for (int i = length; i < 2 * length; ++i)
        for (int j = 0; j < width; ++j)
          window_1_same &= after[std::size_t(i * width + j)] == before[std::size_t(i * width + j)];
      // Without the mask every token sees the changed ones.
      CHECK(earlier_same == causal);
      CHECK(window_1_same);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(attention_causal, Spaces);

// No atomics and sums in a fixed order: a host space with any number of
// threads gives Serial's bits (the two-thread suite runs OpenMP on two).
TEST_CASE_TEMPLATE_DEFINE("attention: the same bits as Serial on host spaces", Space,
                          attention_same_bits) {
#ifdef KOKKOS_ENABLE_SERIAL
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Space::memory_space>::accessible) {
    const gradsum::Tokens t{3, 9};
    const auto in = attention_panel(t.rows(), 3 * 8, 4143);
    const auto dout = attention_panel(t.rows(), 8, 4144);
    for (const bool causal : {true, false}) {
      const gradsum::SelfAttention layer(8, 2, causal);
      const auto here = attention_gradients<Space>(layer, t, in, dout);
      const auto serial = attention_gradients<Kokkos::Serial>(layer, t, in, dout);
      CHECK(here.first == serial.first);
      CHECK(here.second == serial.second);
    }
  }
#endif
}
TEST_CASE_TEMPLATE_APPLY(attention_same_bits, Spaces);

TEST_CASE("attention: shapes, workspace and errors that name them") {
  using gradsum::SelfAttention;
  const SelfAttention layer(8, 2, false);
  CHECK(layer.num_parameters() == 0);
  CHECK(layer.input_width() == 24);
  CHECK(layer.output_width() == 8);
  CHECK(layer.describe() == "self_attention(8,2,full)");
  CHECK(SelfAttention(8, 4).describe() == "self_attention(8,4,causal)");
  // P and dS (sequences x H x T x T each), K^T and V^T (sequences x T x
  // C each) and sequences x H x T more.
  CHECK(layer.workspace_size(gradsum::Tokens{3, 5}) ==
        2 * (3 * 2 * 5 * 5) + 2 * (3 * 5 * 8) + 3 * 2 * 5);
  CHECK(layer.workspace_size(gradsum::Tokens{0, 5}) == 0);
  CHECK_THROWS_WITH_AS(SelfAttention(6, 4), "gradsum::SelfAttention: width 6 is not divisible "
                                            "by heads 4; expected a multiple of 4",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(SelfAttention(0, 2),
                       "gradsum::SelfAttention: width and heads must be >= 1, got width 0 and "
                       "heads 2",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(SelfAttention(4, -1),
                       "gradsum::SelfAttention: width and heads must be >= 1, got width 4 and "
                       "heads -1",
                       gradsum::Error);
  using Space = Kokkos::DefaultHostExecutionSpace;
  std::vector<double> x(4 * 16), y(4 * 8), work(layer.workspace_size(gradsum::Tokens{2, 2}));
  using In = gradsum::LayerInput<double, Space::memory_space>;
  using Out = gradsum::LayerOutput<double, Space::memory_space>;
  CHECK_THROWS_WITH_AS(
      layer.forward(Space(), static_cast<const double*>(nullptr), gradsum::Tokens{2, 2},
                    In(x.data(), 4, 16), Out(y.data(), 4, 8), work.data()),
      "gradsum::SelfAttention::forward: got input 4 x 16 and output 4 x 8; expected 4 x 24 and "
      "4 x 8 (2 windows of 2 tokens, width 8)",
      gradsum::Error);
}
