// SPDX-License-Identifier: Apache-2.0
// TokenEmbedding alone: its parameter gradient against central differences
// (ids as inputs), repeated ids in one panel summing in row order, window
// lengths 1 and odd, check_token_ids on bad ids, a bad id met in a kernel
// (Kokkos::abort with a gradsum: message, in a child process), and the
// errors for bad shapes.

#include "layer_check.hpp"
#include "test_helpers.hpp"

#include <gradsum/model/layers/embedding.hpp>

#include <csignal>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace gradsum_test;

namespace {

// Random ids in [0, vocab), for check_layer.
auto token_ids(int vocab) {
  return [vocab](std::int64_t, int, std::mt19937_64& rng) {
    return double(rng() % std::uint64_t(vocab));
  };
}

template <class Space, class Scalar = double>
std::int64_t first_bad_id(const std::vector<double>& ids, int vocab, bool matrix) {
  using Memory = typename Space::memory_space;
  if (matrix) {
    Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> v("ids", ids.size(), 1);
    auto h = Kokkos::create_mirror_view(v);
    for (std::size_t i = 0; i < ids.size(); ++i) h(i, 0) = Scalar(ids[i]);
    Kokkos::deep_copy(v, h);
    return gradsum::check_token_ids(Space(), v, vocab);
  }
  Kokkos::View<Scalar*, Memory> v("ids", ids.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < ids.size(); ++i) h(i) = Scalar(ids[i]);
  Kokkos::deep_copy(v, h);
  return gradsum::check_token_ids(Space(), v, vocab);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("TokenEmbedding: backward against central differences", Space,
                          token_embedding_differences) {
  struct Shape {
    int vocab, width;
  };
  for (Shape s : {Shape{1, 1}, Shape{5, 3}, Shape{7, 67}})
    for (gradsum::Tokens t :
         {gradsum::Tokens{1, 1}, gradsum::Tokens{3, 1}, gradsum::Tokens{2, 7}}) {
      const auto e = check_layer<Space>(gradsum::TokenEmbedding{s.vocab, s.width}, t,
                                        std::uint64_t(3 + s.width), token_ids(s.vocab), false);
      CHECK(e.parameters < 1e-7);
      CHECK(e.accumulate < 1e-14);
    }
}

TEST_CASE_TEMPLATE_DEFINE("TokenEmbedding: repeated ids sum into one row, in row order", Space,
                          token_embedding_repeated) {
  const gradsum::TokenEmbedding layer{4, 3};
  const gradsum::Tokens t{1, 5};
  const std::vector<double> ids = {2, 2, 0, 2, 2};
  const auto theta = random_vector(12, 21), dout = random_vector(15, 22),
             before = random_vector(12, 23);
  gradsum_test::detail::LayerRun<Space, gradsum::TokenEmbedding> run(layer, t);
  gradsum_test::detail::from_host(run.theta, theta);
  gradsum_test::detail::from_host(run.in, ids);
  gradsum_test::detail::from_host(run.dout, dout);
  gradsum_test::detail::from_host(run.g, before);
  gradsum_test::detail::from_host(run.din, std::vector<double>(5, 99.0));
  run.forward();
  run.backward(true);
  const auto out = gradsum_test::detail::to_host(run.out);
  const auto g = gradsum_test::detail::to_host(run.g);
  const auto din = gradsum_test::detail::to_host(run.din);
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t j = 0; j < 3; ++j) CHECK(out[r * 3 + j] == theta[std::size_t(ids[r]) * 3 + j]);
  for (std::size_t j = 0; j < 3; ++j) {
    // The rows of token 2 (0, 1, 3, 4) added one after the other.
    CHECK(g[6 + j] == (((before[6 + j] + dout[j]) + dout[3 + j]) + dout[9 + j]) + dout[12 + j]);
    CHECK(g[0 + j] == before[0 + j] + dout[6 + j]);
    CHECK(g[3 + j] == before[3 + j]);  // tokens 1 and 3 do not occur
    CHECK(g[9 + j] == before[9 + j]);
  }
  for (double d : din) CHECK(d == 0);  // an id has no gradient
}

TEST_CASE_TEMPLATE_DEFINE("check_token_ids: the first row outside [0, vocab)", Space,
                          token_embedding_check_ids) {
  for (bool matrix : {false, true}) {
    CHECK(first_bad_id<Space>({0, 1, 4, 2}, 5, matrix) == -1);
    CHECK(first_bad_id<Space>({}, 5, matrix) == -1);
    CHECK(first_bad_id<Space>({0, 3, 4, 5, -1}, 5, matrix) == 3);
    CHECK(first_bad_id<Space>({-1, 0}, 5, matrix) == 0);
    CHECK(first_bad_id<Space>({0, 1.5, 7}, 5, matrix) == 1);
    CHECK(first_bad_id<Space>({0, 1, std::numeric_limits<double>::quiet_NaN()}, 5, matrix) == 2);
    CHECK(first_bad_id<Space>({0, 0, 0, 1}, 1, matrix) == 3);
    CHECK(first_bad_id<Space, float>({2, 62, 63}, 63, matrix) == 2);
  }
  std::vector<double> many(1000, 1.0);
  many[777] = 10;
  many[901] = -3;
  CHECK(first_bad_id<Space>(many, 10, true) == 777);
}

#ifdef KOKKOS_ENABLE_SERIAL
TEST_CASE("TokenEmbedding: a bad id in a kernel aborts with a gradsum: message") {
  // In a child process on Serial (no thread pool to lose in the fork), its
  // standard error into a pipe: what a user sees when no check came first.
  for (double id : {5.0, -1.0, 2.5}) {
    INFO("id " << id);
    // Built before the fork: a View's allocation runs on the default space.
    gradsum_test::detail::LayerRun<Kokkos::Serial, gradsum::TokenEmbedding> run(
        gradsum::TokenEmbedding{5, 3}, {1, 2});
    gradsum_test::detail::from_host(run.in, {1, id});
    int pipe_ends[2];
    REQUIRE(::pipe(pipe_ends) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::alarm(60);  // a hang fails the test (SIGALRM) instead of stalling it
      ::dup2(pipe_ends[1], 2);
      run.forward();
      ::_exit(0);  // not reached
    }
    ::close(pipe_ends[1]);
    std::string err;
    char buffer[256];
    for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;)
      err.append(buffer, std::size_t(got));
    ::close(pipe_ends[0]);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(err.find("gradsum: TokenEmbedding: a token id outside [0, vocab)") != std::string::npos);
  }
}
#endif

TEST_CASE("TokenEmbedding: bad shapes are errors naming them") {
  auto message = [](const gradsum::TokenEmbedding& layer) { return validate_error(layer); };
  CHECK(message({0, 4}) == "gradsum::TokenEmbedding: vocab must be at least 1, got 0");
  CHECK(message({63, -2}) == "gradsum::TokenEmbedding: width must be at least 1, got -2");
  CHECK(message({100000, 100000}) ==
        "gradsum::TokenEmbedding: vocab x width = 100000 x 100000 exceeds the limit of "
        "2147483647 parameters");
  CHECK(message({63, 128}) == "");
  CHECK(gradsum::TokenEmbedding{63, 128}.describe() == "token_embedding(63,128)");
  CHECK(gradsum::TokenEmbedding{63, 128}.num_parameters() == 63 * 128);
}

TEST_CASE_TEMPLATE_APPLY(token_embedding_differences, Spaces);
TEST_CASE_TEMPLATE_APPLY(token_embedding_repeated, Spaces);
TEST_CASE_TEMPLATE_APPLY(token_embedding_check_ids, Spaces);
