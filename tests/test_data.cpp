// SPDX-License-Identifier: Apache-2.0
// Partitioning and mini-batch sampling.

#include "test_helpers.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

using namespace gradsum_test;

TEST_CASE("partition: near-equal contiguous parts, empty parts allowed") {
  auto sizes = [](std::int64_t n, int parts) {
    std::vector<std::int64_t> out;
    std::int64_t next = 0;
    for (int p = 0; p < parts; ++p) {
      const auto r = gradsum::partition(n, parts, p);
      CHECK(r.begin == next);  // parts cover the rows in order
      next = r.end;
      out.push_back(r.size());
    }
    CHECK(next == n);
    return out;
  };
  CHECK(sizes(10, 3) == std::vector<std::int64_t>{4, 3, 3});
  CHECK(sizes(10, 4) == std::vector<std::int64_t>{3, 3, 2, 2});
  CHECK(sizes(2, 4) == std::vector<std::int64_t>{1, 1, 0, 0});
  CHECK(sizes(0, 3) == std::vector<std::int64_t>{0, 0, 0});
  for (std::int64_t n : {1, 7, 100, 1001})
    for (int parts = 1; parts <= 9; ++parts) {
      const auto s = sizes(n, parts);
      const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
      CHECK(*hi - *lo <= 1);
    }
  CHECK_THROWS_WITH_AS(gradsum::partition(10, 0, 0),
                       "gradsum::partition: parts must be at least 1, got 0", gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::partition(10, 3, 3),
                       "gradsum::partition: part must be in [0, 3), got 3", gradsum::Error);
}

TEST_CASE_TEMPLATE_DEFINE("sampler: every epoch is a permutation, fixed by the seed", Space,
                          sampler) {
  using Memory = typename Space::memory_space;
  gradsum::MiniBatchSampler<Memory> a(23, 5, 42), b(23, 5, 42), c(23, 5, 43);
  CHECK(a.num_batches() == 5);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    a.shuffle(epoch);
    b.shuffle(epoch);
    c.shuffle(epoch);
    auto order = a.order();
    CHECK(order == b.order());
    CHECK(order != c.order());
    std::sort(order.begin(), order.end());
    std::vector<std::int64_t> iota(23);
    std::iota(iota.begin(), iota.end(), 0);
    CHECK(order == iota);
  }
  // The batches tile the epoch order, and worker parts tile each batch.
  std::vector<std::int64_t> seen;
  for (std::int64_t bt = 0; bt < a.num_batches(); ++bt) {
    const auto whole = a.batch(bt);
    CHECK(whole.size() == (bt < 4 ? 5 : 3));
    std::int64_t covered = 0;
    for (int part = 0; part < 3; ++part) {
      const auto mine = a.batch(bt, 3, part);
      CHECK(mine.begin == whole.begin + covered);
      covered += mine.size();
    }
    CHECK(covered == whole.size());
    auto index = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.index);
    for (std::int64_t i = whole.begin; i < whole.end; ++i) seen.push_back(index(i));
  }
  CHECK(seen == a.order());

  gradsum::MiniBatchSampler<Memory> full(7, 0, 1);
  CHECK(full.num_batches() == 1);
  CHECK(full.batch(0).size() == 7);
  CHECK(full.order() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(full.batch(1),
                       "gradsum::MiniBatchSampler::batch: batch index must be in [0, 1), got 1",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::MiniBatchSampler<Memory>(7, -1, 1),
                       doctest::Contains("batch_size must be >= 0"), gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(sampler, Spaces);

TEST_CASE_TEMPLATE_DEFINE("sampled mini-batch gradients split over workers sum to the batch's",
                          Space, sampled_parts) {
  using Memory = typename Space::memory_space;
  const auto problem = random_problem(50, 4, Kind::binary, 2, 77);
  const auto data = gradsum::Dataset<double, Memory>::from_host(problem.n, problem.d,
                                                                problem.x, problem.y);
  gradsum::MiniBatchSampler<Memory> sampler(problem.n, 16, 5);
  sampler.shuffle(2);
  auto step = gradsum::make_step<double>(Space(), gradsum::Linear(4),
                                         gradsum::BinaryCrossEntropy{}, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  fill(theta, random_vector(5, 3));
  step.evaluate(theta, data, sampler.batch(1));
  const auto whole = to_host(step.sums());
  std::vector<double> total(5, 0.0);
  for (int part = 0; part < 4; ++part) {
    step.evaluate(theta, data, sampler.batch(1, 4, part));
    const auto s = to_host(step.sums());
    for (int j = 0; j < 5; ++j) total[j] += s[j];
  }
  CHECK(relative_distance(total, whole, 5) <= 1e-13);
  // And the batch gradient matches the host reference over the same rows.
  HostProblem batch{16, 4, {}, {}};
  const auto& order = sampler.order();
  for (std::int64_t i = 16; i < 32; ++i) {
    const auto r = std::size_t(order[std::size_t(i)]);
    batch.x.insert(batch.x.end(), problem.x.begin() + r * 4, problem.x.begin() + r * 4 + 4);
    batch.y.push_back(problem.y[r]);
  }
  const auto reference = reference_sums(batch, 1, Kind::binary, to_host(theta), 0, 16);
  CHECK(relative_distance(whole, reference, 5) <= 1e-13);
}
TEST_CASE_TEMPLATE_APPLY(sampled_parts, Spaces);

// Shuffled batches of several blocks of the batched path (three of 32 and
// a part block of 4), and a full batch in stored order (nine blocks and a
// part block of 12), on every path that prefetches the rows ahead from
// the batch's index: each gives the textbook gradient over the same rows.
template <class Space, class Model, class Loss>
void check_shuffled_batch(const Model& model, const Loss& loss, Kind kind, int outputs) {
  using Memory = typename Space::memory_space;
  // Rows of 160 bytes: over 128, where a model's batched path that asks
  // for a whole block at once (Softmax's) leaves consecutive rows to the
  // hardware prefetchers and shuffled ones not.
  const int d = 20;
  const auto problem = random_problem(300, d, kind, outputs, 91);
  const auto data =
      gradsum::Dataset<double, Memory>::from_host(problem.n, d, problem.x, problem.y);
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  const std::size_t P = std::size_t(model.num_parameters());
  const auto theta_host = random_vector(P, 4);
  fill(theta, theta_host);
  for (const std::int64_t batch_size : {100, 0}) {
    CAPTURE(batch_size);
    gradsum::MiniBatchSampler<Memory> sampler(problem.n, batch_size, 8);
    const std::int64_t size = sampler.batch_size();
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
      step.evaluate(theta, data, sampler.batch(b));
      HostProblem batch{size, d, {}, {}};
      for (std::int64_t i = size * b; i < size * (b + 1); ++i) {
        const auto r = std::size_t(sampler.order()[std::size_t(i)]);
        batch.x.insert(batch.x.end(), problem.x.begin() + r * d, problem.x.begin() + (r + 1) * d);
        batch.y.push_back(problem.y[r]);
      }
      const auto reference = reference_sums(batch, outputs, kind, theta_host, 0, size);
      CHECK(relative_distance(to_host(step.sums()), reference, P + 1) <= 1e-13);
    }
  }
}

// The same batches through an MLP, whose layer-wise path gathers the
// selected rows into panels: the per-sample path, which asks for them
// eight samples ahead, over the same rows is the reference.
template <class Space>
void check_shuffled_mlp() {
  using Memory = typename Space::memory_space;
  const int d = 20;
  const auto problem = random_problem(300, d, Kind::binary, 1, 93);
  const auto data =
      gradsum::Dataset<double, Memory>::from_host(problem.n, d, problem.x, problem.y);
  gradsum::MLP layerwise(d, {6}, 1, gradsum::Activation::tanh), per_sample = layerwise;
  per_sample.layerwise = false;
  const gradsum::Objective objective{0.0, false};
  auto a = gradsum::make_step<double>(Space(), layerwise, gradsum::BinaryCrossEntropy{},
                                      gradsum::SGD{}, objective);
  auto b = gradsum::make_step<double>(Space(), per_sample, gradsum::BinaryCrossEntropy{},
                                      gradsum::SGD{}, objective);
  auto theta = a.make_parameters();
  const std::size_t P = std::size_t(layerwise.num_parameters());
  fill(theta, random_vector(P, 6, 0.6));
  for (const std::int64_t batch_size : {100, 0}) {
    CAPTURE(batch_size);
    gradsum::MiniBatchSampler<Memory> sampler(problem.n, batch_size, 9);
    for (std::int64_t k = 0; k < sampler.num_batches(); ++k) {
      a.evaluate(theta, data, sampler.batch(k));
      b.evaluate(theta, data, sampler.batch(k));
      CHECK(relative_distance(to_host(a.sums()), to_host(b.sums()), P + 1) <= 1e-13);
    }
  }
}

TEST_CASE_TEMPLATE_DEFINE("sampled batches of several blocks give the textbook gradient on "
                          "every path",
                          Space, shuffled_blocks) {
  gradsum::Linear per_sample(20);
  per_sample.batched = false;
  SUBCASE("linear, batched") {
    check_shuffled_batch<Space>(gradsum::Linear(20), gradsum::BinaryCrossEntropy{}, Kind::binary,
                                1);
  }
  SUBCASE("linear, per sample") {
    check_shuffled_batch<Space>(per_sample, gradsum::BinaryCrossEntropy{}, Kind::binary, 1);
  }
  SUBCASE("softmax") {
    check_shuffled_batch<Space>(gradsum::Softmax(20, 3), gradsum::SoftmaxCrossEntropy{},
                                Kind::multiclass, 3);
  }
  SUBCASE("MLP, layer-wise against per sample") { check_shuffled_mlp<Space>(); }
}
TEST_CASE_TEMPLATE_APPLY(shuffled_blocks, Spaces);

namespace {
// Which rows Linear's batched path asks for while it works on the block
// before `next`: the next block's rows when an index scatters them, else
// (rows in stored order) the block after it's, for rows of at most 512
// bytes, which are then row s of this block 2 B rows on; nothing past the
// selected rows.
template <class Data, class Rows, class RowOf>
void check_rows_asked_for(const Data& data, const Rows& rows, const RowOf& row_of,
                          bool scattered) {
  using X = typename Data::features_view;
  using Y = typename Data::targets_view;
  using Body = gradsum::detail::BlockBody<gradsum::Linear, gradsum::BinaryCrossEntropy, double, X,
                                          Y, Rows>;
  constexpr int B = gradsum::Linear::block_size;
  static_assert(Body::spreads, "Linear's batched path takes an ahead");
  const int d = int(data.num_features());
  const std::vector<double> theta(std::size_t(d) + 1, 0.5);
  const std::int64_t n = rows.size();
  const Body body{{gradsum::Linear(d), gradsum::BinaryCrossEntropy{}, theta.data(), data.features(),
                   data.targets(), rows},
                  d + 1,
                  n};
  const auto x = data.features();
  const std::size_t row_bytes = std::size_t(d) * sizeof(double);
  for (std::int64_t next = B; next < n + 2 * B; next += B) {
    CAPTURE(d);
    CAPTURE(next);
    const double* row[B] = {};
    const auto ahead = body.ahead_of(next, row);
    CHECK(ahead.bytes == std::min<std::size_t>(row_bytes, 1024));
    if (scattered) {
      const std::int64_t count = std::max<std::int64_t>(0, std::min<std::int64_t>(B, n - next));
      REQUIRE(ahead.count == count);
      if (count > 0) REQUIRE(ahead.row == row);
      for (int s = 0; s < count; ++s) CHECK(ahead.row[s] == &x(row_of(next + s), 0));
    } else {
      const std::int64_t later = next + B;
      const std::int64_t count =
          row_bytes > 512 ? 0 : std::max<std::int64_t>(0, std::min<std::int64_t>(B, n - later));
      REQUIRE(ahead.count == count);
      if (count > 0) REQUIRE(ahead.row == nullptr);
      for (int s = 0; s < count; ++s)
        CHECK(ahead.first + s * ahead.stride == &x(row_of(later + s), 0));
    }
  }
}
}  // namespace

TEST_CASE("Linear's batched path asks for the rows it reads next") {
  using Memory = Kokkos::HostSpace;
  const std::int64_t n = 200;  // six blocks of 32 and one of 8
  for (int d : {16, 20, 64, 80}) {  // rows of 128, 160, 512 and 640 bytes
    const auto problem = random_problem(n, d, Kind::binary, 1, 17);
    const auto data = gradsum::Dataset<double, Memory>::from_host(n, d, problem.x, problem.y);
    // In stored order: a RowRange, and a full batch (an index in order).
    check_rows_asked_for(data, data.all_rows(), [](std::int64_t i) { return i; }, false);
    gradsum::MiniBatchSampler<Memory> full(n, 0, 3);
    check_rows_asked_for(data, full.batch(0), [](std::int64_t i) { return i; }, false);
    // Shuffled: one batch of every row, and two of 100.
    for (const std::int64_t size : {n, std::int64_t(100)}) {
      gradsum::MiniBatchSampler<Memory> sampler(n, size, 5);
      for (std::int64_t b = 0; b < sampler.num_batches(); ++b) {
        const auto& order = sampler.order();
        check_rows_asked_for(
            data, sampler.batch(b),
            [&](std::int64_t i) { return order[std::size_t(b * size + i)]; }, true);
      }
    }
  }
}

// Data from the user's own Views: wrapped where rows are contiguous,
// copied on request, refused with a message otherwise.

namespace {

// An n x (d + 1) host table of p's rows with the target in column
// `target` (first or last), in memory space Memory.
template <class Memory>
Kokkos::View<double**, Kokkos::LayoutRight, Memory> make_table(const HostProblem& p, int target) {
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> table("table", p.n, p.d + 1);
  auto h = Kokkos::create_mirror_view(table);
  for (std::int64_t i = 0; i < p.n; ++i) {
    int column = target == 0 ? 1 : 0;
    for (int j = 0; j < p.d; ++j) h(i, column++) = p.x[std::size_t(i * p.d + j)];
    h(i, target) = p.y[std::size_t(i)];
  }
  Kokkos::deep_copy(table, h);
  return table;
}

// The summed gradient and loss of `model` with `loss` over all of `data`.
template <class Space, class Model, class Loss, class Data>
std::vector<double> gradient_of(const Model& model, const Loss& loss, const Data& data,
                                const std::vector<double>& values) {
  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::SGD{},
                                         gradsum::Objective{0.0, false});
  auto theta = step.make_parameters();
  fill(theta, values);
  const auto result = step.evaluate(theta, data);
  auto out = to_host(step.gradient());
  out.push_back(result.loss);
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("Dataset::from_table wraps the table's columns and trains like a copy",
                          Space, from_table) {
  using Memory = typename Space::memory_space;
  using Data = gradsum::Dataset<double, Memory>;
  const auto p = random_problem(41, 6, Kind::multiclass, 3, 12);
  const auto copy = Data::from_host(p.n, p.d, p.x, p.y);
  for (int target : {6, 0}) {
    CAPTURE(target);
    const auto table = make_table<Memory>(p, target);
    const auto data = Data::from_table(table, target);
    static_assert(std::is_same<std::decay_t<decltype(data)>,
                               gradsum::Dataset<double, Memory, Kokkos::LayoutStride>>::value,
                  "");
    // No copy: the features and targets are the table's own memory.
    CHECK(data.features().data() == table.data() + (target == 0 ? 1 : 0));
    CHECK(data.targets().data() == table.data() + target);
    CHECK(data.num_samples() == p.n);
    CHECK(data.num_features() == p.d);
    // The same numbers in another layout: the same gradients, on the
    // per-sample kernels and on the layer-wise path.
    const auto theta_softmax = random_vector(3 * 7, 5);
    CHECK(relative_distance(
              gradient_of<Space>(gradsum::Softmax(6, 3), gradsum::SoftmaxCrossEntropy{}, data,
                                 theta_softmax),
              gradient_of<Space>(gradsum::Softmax(6, 3), gradsum::SoftmaxCrossEntropy{}, copy,
                                 theta_softmax),
              3 * 7 + 1) <= 1e-14);
    const auto theta_linear = random_vector(7, 6);
    CHECK(relative_distance(
              gradient_of<Space>(gradsum::Linear(6), gradsum::SquaredError{}, data, theta_linear),
              gradient_of<Space>(gradsum::Linear(6), gradsum::SquaredError{}, copy, theta_linear),
              8) <= 1e-14);
    const gradsum::MLP net(6, {300}, 3, gradsum::Activation::tanh);
    const auto theta_net = random_vector(std::size_t(net.num_parameters()), 7, 0.1);
    CHECK(relative_distance(
              gradient_of<Space>(net, gradsum::SoftmaxCrossEntropy{}, data, theta_net),
              gradient_of<Space>(net, gradsum::SoftmaxCrossEntropy{}, copy, theta_net),
              std::size_t(net.num_parameters()) + 1) <= 1e-13);
    // fit() over shuffled mini-batches, with validation data of the same
    // type, follows the same path from the same start.
    auto train = [&](const auto& d) {
      auto step = gradsum::make_step<double>(Space(), gradsum::Softmax(6, 3),
                                             gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{0.1});
      auto theta = step.make_parameters();
      fill(theta, theta_softmax);
      gradsum::FitOptions options;
      options.epochs = 3;
      options.batch = 8;
      options.seed = 9;
      gradsum::fit(step, theta, d, &d, options);  // validated on itself
      return to_host(theta);
    };
    CHECK(relative_distance(train(data), train(copy), 3 * 7) <= 1e-13);
  }
}
TEST_CASE_TEMPLATE_APPLY(from_table, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Dataset::copy_from copies any layout from any memory space", Space,
                          copy_from) {
  using Memory = typename Space::memory_space;
  // A column-major host table, copied into the space's memory as float.
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> x("x", 5, 3);
  Kokkos::View<int*, Kokkos::HostSpace> y("y", 5);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) x(i, j) = 10.0 * i + j + 0.25;
    y(i) = i % 2;
  }
  const auto data = gradsum::Dataset<float, Memory>::copy_from(x, y);
  CHECK(data.num_samples() == 5);
  CHECK(data.num_features() == 3);
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data.features());
  const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data.targets());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j) CHECK(hx(i, j) == float(10.0 * i + j + 0.25));
    CHECK(hy(i) == float(i % 2));
  }
  // And back: the middle column of a table in the space's memory as the
  // target, the other two as features, into a host Dataset.
  const auto table = make_table<Memory>(random_problem(4, 2, Kind::regression, 1, 3), 2);
  const auto back = gradsum::Dataset<double, Kokkos::HostSpace>::copy_from(
      Kokkos::subview(table, Kokkos::ALL(), Kokkos::make_pair(0, 2)),
      Kokkos::subview(table, Kokkos::ALL(), 1));
  const auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), table);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) CHECK(back.features()(i, j) == ht(i, j));
    CHECK(back.targets()(i) == ht(i, 1));
  }
  using Data = gradsum::Dataset<double, Memory>;
  CHECK_THROWS_WITH_AS(Data::copy_from(x, Kokkos::subview(y, Kokkos::make_pair(0, 4))),
                       "gradsum::Dataset::copy_from: features have 5 rows but targets have 4",
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(copy_from, Spaces);

TEST_CASE_TEMPLATE_DEFINE("Dataset: Views it cannot wrap are refused, naming the argument", Space,
                          dataset_refusals) {
  using Memory = typename Space::memory_space;
  using Data = gradsum::Dataset<double, Memory>;
  using Strided = gradsum::Dataset<double, Memory, Kokkos::LayoutStride>;
  const auto table = make_table<Memory>(random_problem(4, 3, Kind::regression, 1, 2), 3);
  // (Some Kokkos versions give the column range a padded LayoutRight type.)
  const Kokkos::View<double**, Kokkos::LayoutStride, Memory> x =
      Kokkos::subview(table, Kokkos::ALL(), Kokkos::make_pair(0, 3));
  const auto y = Kokkos::subview(table, Kokkos::ALL(), 3);
  // The deduced type holds strided Views as they are.
  const gradsum::Dataset deduced(x, y);
  static_assert(std::is_same<std::decay_t<decltype(deduced)>, Strided>::value, "");
  CHECK(deduced.features().data() == table.data());
  // A row-major Dataset cannot hold them: gradsum's message, not Kokkos's abort.
  CHECK_THROWS_WITH_AS(Data(x, y),
                       "gradsum::Dataset: features have strides (4, 1), not those of a "
                       "LayoutRight 4 x 3 View (3, 1): use Dataset<Scalar, Memory, "
                       "Kokkos::LayoutStride>, or `gradsum::Dataset data(x, y)` to deduce it, "
                       "or Dataset::from_table",
                       gradsum::Error);
  const Kokkos::View<double**, Kokkos::LayoutRight, Memory> right("x", 4, 3);
  CHECK_THROWS_WITH_AS(Data(right, y),
                       "gradsum::Dataset: targets have stride 4; a LayoutRight Dataset holds "
                       "contiguous targets: use Dataset<Scalar, Memory, Kokkos::LayoutStride>, "
                       "or `gradsum::Dataset data(x, y)` to deduce it, or Dataset::from_table",
                       gradsum::Error);
  // Columns of a column-major buffer seen through LayoutStride: rows not
  // contiguous, held as they are (test_layouts.cpp checks what they give);
  // a LayoutLeft Dataset takes them only with LayoutLeft's strides.
  const Kokkos::View<double**, Kokkos::LayoutStride, Memory> by_columns(
      table.data(), Kokkos::LayoutStride(4, 1, 3, 4));
  CHECK(Strided(by_columns, y).features().data() == table.data());
  const Kokkos::View<double*, Memory> four("y", 4);
  CHECK(gradsum::Dataset<double, Memory, Kokkos::LayoutLeft>(by_columns, four).num_features() ==
        3);
  const Kokkos::View<double**, Kokkos::LayoutStride, Memory> padded(
      table.data(), Kokkos::LayoutStride(4, 1, 3, 5));
  CHECK_THROWS_WITH_AS((gradsum::Dataset<double, Memory, Kokkos::LayoutLeft>(padded, four)),
                       "gradsum::Dataset: features have strides (1, 5), not those of a "
                       "LayoutLeft 4 x 3 View (1, 4): use Dataset<Scalar, Memory, "
                       "Kokkos::LayoutStride>, or `gradsum::Dataset data(x, y)` to deduce it, "
                       "or Dataset::from_table",
                       gradsum::Error);
  const Kokkos::View<double*, Memory> three("y", 3);
  CHECK_THROWS_WITH_AS(Data(right, three),
                       "gradsum::Dataset: features have 4 rows but targets have 3",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(Data::from_table(table, 4),
                       "gradsum::Dataset::from_table: target_column is 4; expected a column of "
                       "the table, 0 to 3 (it has 4 columns)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(Data::from_table(table, -1),
                       "gradsum::Dataset::from_table: target_column is -1; expected a column of "
                       "the table, 0 to 3 (it has 4 columns)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(Data::from_table(table, 2),
                       "gradsum::Dataset::from_table: target_column 2 lies between feature "
                       "columns of the 4-column table, so a row's features are not contiguous; "
                       "put the target first (0) or last (3), or copy with Dataset::copy_from",
                       gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(dataset_refusals, Spaces);

TEST_CASE("sampler: a batch larger than the data is one batch of every row") {
  // ceil(n / batch) is 1 for any batch >= n; n + batch - 1 overflowed for
  // the largest batches and left an epoch of no batch at all.
  using Memory = Kokkos::HostSpace;
  for (std::int64_t batch : {std::int64_t(23), std::int64_t(24), std::int64_t(1) << 40,
                             std::numeric_limits<std::int64_t>::max()}) {
    INFO("batch " << batch);
    gradsum::MiniBatchSampler<Memory> s(23, batch, 1);
    REQUIRE(s.num_batches() == 1);
    const auto rows = s.batch(0);
    CHECK(rows.begin == 0);
    CHECK(rows.end == 23);
  }
  gradsum::MiniBatchSampler<Memory> s(23, std::numeric_limits<std::int64_t>::max() - 1, 1);
  CHECK(s.num_batches() == 1);
}
