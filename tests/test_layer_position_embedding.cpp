// SPDX-License-Identifier: Apache-2.0
// PositionEmbedding alone: its backward against central differences
// (window lengths 1, odd and the whole context), each row getting the
// vector of its position within its window and the windows' sums per
// position, and the errors for windows longer than the context.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/position_embedding.hpp>

#include <string>
#include <vector>

using namespace gradsum_test;

TEST_CASE_TEMPLATE_DEFINE("PositionEmbedding: backward against central differences", Space,
                          position_embedding_differences) {
  for (int width : {1, 3, 67})
    for (gradsum::Tokens t : {gradsum::Tokens{1, 1}, gradsum::Tokens{4, 1}, gradsum::Tokens{3, 5},
                              gradsum::Tokens{2, 7}}) {
      const auto e =
          check_layer<Space>(gradsum::PositionEmbedding{7, width}, t, std::uint64_t(31 + width));
      CHECK(e.parameters < 1e-7);
      CHECK(e.inputs < 1e-7);
      CHECK(e.accumulate < 1e-14);
    }
}

TEST_CASE_TEMPLATE_DEFINE("PositionEmbedding: a row's position within its window", Space,
                          position_embedding_positions) {
  // Three windows of 4 tokens in a context of 6: rows 0, 4 and 8 are at
  // position 0; positions 4 and 5 are not used.
  const int context = 6, n = 3, length = 4;
  const gradsum::PositionEmbedding layer{context, n};
  const gradsum::Tokens t{3, length};
  const auto theta = random_vector(std::size_t(context * n), 41),
             in = random_vector(std::size_t(t.rows() * n), 42),
             dout = random_vector(std::size_t(t.rows() * n), 43),
             before = random_vector(std::size_t(context * n), 44);
  gradsum_test::detail::LayerRun<Space, gradsum::PositionEmbedding> run(layer, t);
  gradsum_test::detail::from_host(run.theta, theta);
  gradsum_test::detail::from_host(run.in, in);
  gradsum_test::detail::from_host(run.dout, dout);
  gradsum_test::detail::from_host(run.g, before);
  run.forward();
  run.backward(true);
  const auto out = gradsum_test::detail::to_host(run.out);
  const auto g = gradsum_test::detail::to_host(run.g);
  const auto din = gradsum_test::detail::to_host(run.din);
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t p = 0; p < std::size_t(length); ++p)
      for (std::size_t j = 0; j < std::size_t(n); ++j) {
        const std::size_t i = (s * length + p) * n + j;
        CHECK(out[i] == in[i] + theta[p * n + j]);
        CHECK(din[i] == dout[i]);
      }
  for (std::size_t p = 0; p < std::size_t(context); ++p)
    for (std::size_t j = 0; j < std::size_t(n); ++j) {
      // The windows' rows at position p, added in window order.
      const double want =
          p < std::size_t(length)
              ? ((before[p * n + j] + dout[p * n + j]) + dout[(length + p) * n + j]) +
                    dout[(2 * length + p) * n + j]
              : before[p * n + j];
      CHECK(g[p * n + j] == want);
    }
}

TEST_CASE_TEMPLATE_DEFINE("PositionEmbedding: windows longer than the context", Space,
                          position_embedding_too_long) {
  const gradsum::PositionEmbedding layer{7, 3};
  gradsum_test::detail::LayerRun<Space, gradsum::PositionEmbedding> run(layer, {2, 8});
  const std::string message =
      "gradsum::PositionEmbedding: windows of 8 tokens do not fit its context of 7 positions "
      "(expected 1 to 7)";
  CHECK_THROWS_WITH_AS(run.forward(), message.c_str(), gradsum::Error);
  CHECK_THROWS_WITH_AS(run.backward(true), message.c_str(), gradsum::Error);
  gradsum_test::detail::LayerRun<Space, gradsum::PositionEmbedding> empty(layer, {2, 0});
  CHECK_THROWS_AS(empty.forward(), gradsum::Error);
}

TEST_CASE("PositionEmbedding: bad shapes are errors naming them") {
  auto message = [](const gradsum::PositionEmbedding& layer) { return validate_error(layer); };
  CHECK(message({0, 4}) == "gradsum::PositionEmbedding: context must be at least 1, got 0");
  CHECK(message({64, 0}) == "gradsum::PositionEmbedding: width must be at least 1, got 0");
  CHECK(message({1 << 20, 1 << 12}) ==
        "gradsum::PositionEmbedding: context x width = 1048576 x 4096 exceeds the limit of "
        "2147483647 parameters");
  CHECK(message({64, 128}) == "");
  CHECK(gradsum::PositionEmbedding{64, 128}.describe() == "position_embedding(64,128)");
}

TEST_CASE_TEMPLATE_APPLY(position_embedding_differences, Spaces);
TEST_CASE_TEMPLATE_APPLY(position_embedding_positions, Spaces);
TEST_CASE_TEMPLATE_APPLY(position_embedding_too_long, Spaces);
