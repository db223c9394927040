// SPDX-License-Identifier: Apache-2.0
// The chunked array reduction (reduction/array_reduce.hpp), which a GPU
// takes for accumulators too wide for its threads. Forced here on the host
// backends, so the path that only a GPU takes by itself is tested on every
// machine. Expected values: the textbook gradient and Hessian written out
// in long double, and, for Reproducible, the bits of the ordinary path
// (its result may not depend on how the samples are grouped).

#include "test_helpers.hpp"

#include <cstring>

using namespace gradsum_test;

namespace {

template <class View>
std::vector<unsigned char> bits_of(const View& v, std::size_t count) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<unsigned char> b(count * sizeof(typename View::non_const_value_type));
  std::memcpy(b.data(), h.data(), b.size());
  return b;
}

// The summed gradient and loss of `reduction` over p for theta.
template <class Space, class Model, class Loss, class Reduction>
std::vector<double> sums(const HostProblem& p, const Model& model, const Loss& loss,
                         const Reduction& reduction, const std::vector<double>& theta,
                         std::vector<unsigned char>* bits = nullptr) {
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false}, gradsum::Analytic{},
                                         reduction);
  auto t = step.make_parameters();
  fill(t, theta);
  step.evaluate(t, data);
  const std::size_t count = std::size_t(step.num_parameters()) + 1;
  if (bits != nullptr) *bits = bits_of(step.sums(), count);
  auto all = to_host(step.sums());
  all.resize(count);
  return all;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("the chunked reduction sums a wide gradient like a parallel_reduce", Space,
                          chunked_gradient) {
  // 301 parameters: 302 accumulator values (2.4 KiB of double), more than
  // a GPU thread may keep.
  const int d = 300;
  const auto p = random_problem(517, d, Kind::regression, 1, 91);
  const auto theta = random_vector(std::size_t(d) + 1, 92, 0.1);
  const auto reference = reference_sums(p, 1, Kind::regression, theta, 0, p.n);
  std::vector<unsigned char> ordinary_bits;
  sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{}, gradsum::Reproducible{}, theta,
              &ordinary_bits);
  // One chunk, a power of two, odd counts (a chunk left over at every tree
  // level), one sample per chunk, more chunks than samples.
  for (std::int64_t chunks : {1, 2, 7, 64, 517, 900}) {
    INFO("chunks = " << chunks);
    const ForceChunks force(chunks);
    CHECK(relative_distance(sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{},
                                        gradsum::Sum{}, theta),
                            reference, reference.size()) < 1e-13);
    CHECK(relative_distance(sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{},
                                        gradsum::Compensated{}, theta),
                            reference, reference.size()) < 1e-15);
    std::vector<unsigned char> chunked_bits;
    sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{}, gradsum::Reproducible{}, theta,
                &chunked_bits);
    CHECK(chunked_bits == ordinary_bits);
  }
}
TEST_CASE_TEMPLATE_APPLY(chunked_gradient, Spaces);

TEST_CASE_TEMPLATE_DEFINE("the chunked reduction sums the Hessian of 31 parameters", Space,
                          chunked_hessian) {
  // 961 accumulator values: the Newton step that failed on a GPU.
  const int d = 30;
  const auto p = random_problem(203, d, Kind::regression, 1, 93);
  const auto data = gradsum::Dataset<double, typename Space::memory_space>::from_host(p.n, p.d, p.x, p.y);
  const int P = d + 1;
  // Mean squared error / 2: H = (1/n) sum [x; 1][x; 1]^T, in long double.
  std::vector<long double> expected(std::size_t(P) * P, 0.0L);
  for (std::int64_t i = 0; i < p.n; ++i)
    for (int a = 0; a < P; ++a)
      for (int b = 0; b < P; ++b) {
        const long double xa = a < d ? p.x[std::size_t(i) * d + a] : 1.0L;
        const long double xb = b < d ? p.x[std::size_t(i) * d + b] : 1.0L;
        expected[std::size_t(a) * P + b] += xa * xb / (long double)p.n;
      }
  for (std::int64_t chunks : {3, 64}) {
    INFO("chunks = " << chunks);
    const ForceChunks force(chunks);
    auto check = [&](const auto& reduction) {
      auto step = gradsum::make_step<double>(Space(), gradsum::Linear(d), gradsum::SquaredError{},
                                             gradsum::SGD{}, gradsum::Objective{},
                                             gradsum::Analytic{}, reduction);
      auto theta = step.make_parameters();
      INFO("reduction " << reduction.name());
      CHECK(relative_distance(step.hessian(theta, data, data.all_rows()), expected,
                              expected.size()) < 1e-14);
    };
    check(gradsum::Sum{});
    check(gradsum::Compensated{});
    check(gradsum::Reproducible{});
  }
}
TEST_CASE_TEMPLATE_APPLY(chunked_hessian, Spaces);

TEST_CASE_TEMPLATE_DEFINE("the chunked reduction sums an MLP of ten thousand parameters", Space,
                          chunked_mlp) {
  // 10-96(tanh)-96(tanh)-3: 10*96+96 + 96*96+96 + 96*3+3 = 10,659 parameters.
  const gradsum::MLP net(10, {96, 96}, 3, gradsum::Activation::tanh);
  auto p = random_problem(129, 10, Kind::multiclass, 3, 94);
  const auto theta = random_vector(std::size_t(net.num_parameters()), 95, 0.2);
  std::vector<unsigned char> ordinary_bits, chunked_bits;
  const auto ordinary = sums<Space>(p, net, gradsum::SoftmaxCrossEntropy{}, gradsum::Reproducible{},
                                    theta, &ordinary_bits);
  const ForceChunks force(5);
  sums<Space>(p, net, gradsum::SoftmaxCrossEntropy{}, gradsum::Reproducible{}, theta, &chunked_bits);
  CHECK(chunked_bits == ordinary_bits);
  // Reproducible rounds the exact sum once: Sum may differ by rounding only.
  CHECK(relative_distance(sums<Space>(p, net, gradsum::SoftmaxCrossEntropy{}, gradsum::Sum{}, theta),
                          ordinary, ordinary.size()) < 1e-13);
}
TEST_CASE_TEMPLATE_APPLY(chunked_mlp, Spaces);

TEST_CASE_TEMPLATE_DEFINE("the chunked reduction reuses and grows its workspace", Space,
                          chunked_workspace) {
  // The workspace outlives every call: a narrower or shorter reduction
  // reuses it (over the stale accumulators of the last one), a wider one or
  // one of more chunks grows it. Every result against the long double sums.
  using Memory = typename Space::memory_space;
  gradsum::detail::chunk_workspace_release<Memory>();
  REQUIRE(gradsum::detail::chunk_workspace_bytes<Memory>() == 0);
  struct Run {
    int d;
    std::int64_t chunks;
    bool grows;
  };
  std::size_t bytes = 0;
  for (const Run run : {Run{200, 64, true}, Run{20, 7, false}, Run{200, 3, false},
                        Run{300, 64, true}, Run{300, 517, true}, Run{20, 1, false}}) {
    INFO("d = " << run.d << ", chunks = " << run.chunks);
    const auto p = random_problem(517, run.d, Kind::regression, 1, 96);
    const auto theta = random_vector(std::size_t(run.d) + 1, 97, 0.1);
    const auto reference = reference_sums(p, 1, Kind::regression, theta, 0, p.n);
    const ForceChunks force(run.chunks);
    CHECK(relative_distance(sums<Space>(p, gradsum::Linear(run.d), gradsum::SquaredError{},
                                        gradsum::Sum{}, theta),
                            reference, reference.size()) < 1e-13);
    const std::size_t now = gradsum::detail::chunk_workspace_bytes<Memory>();
    // At least a gradient and a loss per chunk.
    CHECK(now >= std::size_t(run.chunks) * (std::size_t(run.d) + 2) * sizeof(double));
    if (run.grows) CHECK(now > bytes);
    else CHECK(now == bytes);
    bytes = now;
  }
  // The other accumulator types in the same bytes: Compensated's doubles
  // and Reproducible's int64 bins over what Sum left, and Sum over the bins.
  const int d = 20;
  const auto p = random_problem(517, d, Kind::regression, 1, 98);
  const auto theta = random_vector(std::size_t(d) + 1, 99, 0.1);
  const auto reference = reference_sums(p, 1, Kind::regression, theta, 0, p.n);
  std::vector<unsigned char> ordinary_bits, chunked_bits;
  sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{}, gradsum::Reproducible{}, theta,
              &ordinary_bits);
  const ForceChunks force(7);
  CHECK(relative_distance(sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{},
                                      gradsum::Compensated{}, theta),
                          reference, reference.size()) < 1e-15);
  sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{}, gradsum::Reproducible{}, theta,
              &chunked_bits);
  CHECK(chunked_bits == ordinary_bits);
  CHECK(relative_distance(sums<Space>(p, gradsum::Linear(d), gradsum::SquaredError{},
                                      gradsum::Sum{}, theta),
                          reference, reference.size()) < 1e-13);
  CHECK(gradsum::detail::chunk_workspace_bytes<Memory>() == bytes);
}
TEST_CASE_TEMPLATE_APPLY(chunked_workspace, Spaces);

namespace {
struct CountItems {
  KOKKOS_FUNCTION void operator()(std::int64_t, double* acc) const { acc[0] += 1.0; }
};
}  // namespace

TEST_CASE("the chunked reduction of no items is the functor's identity") {
  using Space = std::tuple_element_t<0, Spaces>;
  const CountItems body;
  Kokkos::View<double*, typename Space::memory_space> out("out", 3);
  Kokkos::deep_copy(out, 7.0);
  gradsum::detail::chunked_reduce(Space(), "test::empty", 0,
                                  gradsum::detail::ArraySumFunctor<double, CountItems>{3, body},
                                  4, out);
  CHECK(to_host(out) == std::vector<double>{0.0, 0.0, 0.0});
  // And of 10 items in 4 chunks: every item once.
  gradsum::detail::chunked_reduce(Space(), "test::count", 10,
                                  gradsum::detail::ArraySumFunctor<double, CountItems>{3, body},
                                  4, out);
  CHECK(to_host(out) == std::vector<double>{10.0, 0.0, 0.0});
}

TEST_CASE("a GPU keeps small accumulators per thread and sends wide ones to chunks") {
  using gradsum::detail::device_accumulator_bytes;
  using gradsum::detail::thread_accumulator_fits;
  CHECK(thread_accumulator_fits<Kokkos::DefaultHostExecutionSpace>(std::size_t(1) << 30));
#ifdef KOKKOS_ENABLE_CUDA
  CHECK(thread_accumulator_fits<Kokkos::Cuda>(device_accumulator_bytes));
  CHECK_FALSE(thread_accumulator_fits<Kokkos::Cuda>(device_accumulator_bytes + 1));
#endif
}
