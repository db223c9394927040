// SPDX-License-Identifier: Apache-2.0
// The Reproducible reduction's floating-point deposit at its edges: windows
// that rise mid-stream, values on both sides of a window's limit, ties at
// the lowest bin, subnormal and huge windows (the integer path), NaN and
// infinity, and the moves of the floating-point bins into the int64 bins
// (every sample, every third, rarely). Expected values come from the split's
// definition (docs of gradsum/reduction/reproducible.hpp) and exact sums,
// and every variant (backend, thread count, flush interval, AVX2 copy or
// not, one value at a time through binned_add) must give the same bits.

#include "test_helpers.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

using namespace gradsum_test;

namespace {

// Adds row i of an n x w table to the sample's contributions.
template <class Scalar, class Memory>
struct TableBody {
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> values;
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    for (int j = 0; j < int(values.extent(1)); ++j) acc[j] += values(i, j);
  }
};

// Columns of values, spread over `n` rows (row k of column j holds the
// column's k-th value at a row that mixes the columns' order; the rest are
// zeros), so that every thread sees some of each column.
struct Table {
  std::int64_t n = 0;
  int w = 0;
  std::vector<double> x;  // n x w, row major
};

Table spread(const std::vector<std::vector<double>>& columns, std::int64_t n) {
  Table t;
  t.n = n;
  t.w = int(columns.size());
  t.x.assign(std::size_t(n) * std::size_t(t.w), 0.0);
  for (int j = 0; j < t.w; ++j)
    for (std::size_t k = 0; k < columns[j].size(); ++k) {
      const std::int64_t row = (std::int64_t(k) * 97 + 13 * j) % n;
      REQUIRE(t.x[std::size_t(row) * t.w + j] == 0.0);
      t.x[std::size_t(row) * t.w + j] = columns[j][k];
    }
  return t;
}

// The integer-format bins (binned_width per column) of the table's columns.
template <class Space, class Scalar>
std::vector<std::int64_t> deposit_bins(const Table& t, std::int64_t flush_interval, bool avx2) {
  using Memory = typename Space::memory_space;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> values("values", t.n, t.w);
  auto h = Kokkos::create_mirror_view(values);
  for (std::int64_t i = 0; i < t.n; ++i)
    for (int j = 0; j < t.w; ++j) h(i, j) = Scalar(t.x[std::size_t(i) * t.w + j]);
  Kokkos::deep_copy(values, h);
  Kokkos::View<std::int64_t*, Memory> bins("bins", gradsum::detail::binned_work_size(t.w));
  gradsum::detail::reduce_binned<Scalar>(Space(), "test", t.n, t.w,
                                         TableBody<Scalar, Memory>{values}, bins, flush_interval,
                                         avx2);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bins);
  return std::vector<std::int64_t>(hb.data(), hb.data() + gradsum::detail::binned_width * t.w);
}

// The same bins, one value at a time through binned_add, in row order.
std::vector<std::int64_t> reference_bins(const Table& t) {
  std::vector<std::int64_t> bins(std::size_t(gradsum::detail::binned_width) * t.w, 0);
  for (int j = 0; j < t.w; ++j) bins[std::size_t(gradsum::detail::binned_width) * j] = gradsum::detail::empty_window;
  for (std::int64_t i = 0; i < t.n; ++i)
    for (int j = 0; j < t.w; ++j)
      gradsum::detail::binned_add(&bins[std::size_t(gradsum::detail::binned_width) * j],
                                  t.x[std::size_t(i) * t.w + j]);
  return bins;
}

std::vector<double> values_of(const std::vector<std::int64_t>& bins) {
  std::vector<double> out(bins.size() / gradsum::detail::binned_width);
  for (std::size_t j = 0; j < out.size(); ++j)
    out[j] = gradsum::detail::binned_value(&bins[gradsum::detail::binned_width * j]);
  return out;
}

// Every variant's bins equal the one-value-at-a-time bins; returns them.
template <class Scalar>
std::vector<std::int64_t> check_variants(const Table& t) {
  const auto reference = reference_bins(t);
  for_each_space(static_cast<Spaces*>(nullptr), [&](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    for (std::int64_t flush : {std::int64_t(1), std::int64_t(3), gradsum::detail::max_flush_interval})
      for (bool avx2 : {false, true}) {
        INFO(gradsum::space_name<Space>() << ", flush every " << flush << ", avx2 " << avx2);
        CHECK(deposit_bins<Space, Scalar>(t, flush, avx2) == reference);
      }
  });
  return reference;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("reproducible deposit: exact sums at the edges of windows and bins") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double sub = std::numeric_limits<double>::denorm_min();  // 2^-1074
  const std::vector<std::vector<double>> columns = {
      // The window rises twice mid-stream (T = 0, 1, 2); every value is a
      // multiple of the final lowest unit 2^0: exact.
      {1.0, std::ldexp(1.0, 40), 5.0, std::ldexp(1.0, 70), -std::ldexp(1.0, 70),
       -std::ldexp(1.0, 40), 7 * std::ldexp(1.0, 20)},
      // Ties at the lowest bin (window T = 2, unit 1) round away from zero:
      // 0.5 + 0.5 - 0.5 + 1.5 + 2.5 counts 1 + 1 - 1 + 2 + 3 = 6.
      {std::ldexp(1.0, 64), 0.5, 0.5, -0.5, 1.5, 2.5, -std::ldexp(1.0, 64)},
      // Ties in the upper bins (window 2: 2^63 is half of 2^64, 2^31 and
      // 3 2^31 are odd halves of 2^32): no change to the total, but to how
      // values are split into bins, which every variant must do alike.
      {std::ldexp(1.0, 63), std::ldexp(1.0, 31), std::ldexp(1.0, 63), std::ldexp(1.0, 31),
       3 * std::ldexp(1.0, 31)},
      // Both sides of window 1's limit 2^63: 2^63 - 1024 fits window 1,
      // 2^63 needs window 2.
      {std::ldexp(1.0, 63) - 1024, 3.0, std::ldexp(1.0, 63), -std::ldexp(1.0, 63),
       -(std::ldexp(1.0, 63) - 1024)},
      // Subnormals (window -32, the integer path): exact.
      {sub, sub, 3 * sub, 1e-310, -sub, 5 * sub},
      // Window -31, the lowest the floating-point deposit serves: residuals
      // are subnormal; multiples of its lowest unit 2^-1056: exact.
      {std::ldexp(1.0, -990), 3 * std::ldexp(1.0, -1050), -std::ldexp(1.0, -990),
       std::ldexp(1.0, -1040)},
      // Huge window (31, the integer path): 2^900 lies below its lowest
      // unit 2^928 and rounds to 0; the rest is exact.
      {1e300, 2e300, -1e300, std::ldexp(1.0, 900)},
      // Non-finite values poison their coordinate only.
      {1.0, nan, 2.0},
      {1.0, inf, -inf},
      // Nothing but zeros.
      {0.0, -0.0},
  };
  const std::vector<double> expected = {
      6 + 7 * std::ldexp(1.0, 20), 6.0, std::ldexp(1.0, 64) + 5 * std::ldexp(1.0, 31), 3.0,
      9 * sub + 1e-310,
      3 * std::ldexp(1.0, -1050) + std::ldexp(1.0, -1040), 2e300, nan, nan, 0.0};
  const auto bins = check_variants<double>(spread(columns, 1000));
  const auto values = values_of(bins);
  for (std::size_t j = 0; j < expected.size(); ++j) {
    INFO("column " << j << ": " << std::hexfloat << values[j] << ", expected " << expected[j]);
    if (std::isnan(expected[j]))
      CHECK(std::isnan(values[j]));
    else
      CHECK(same_bits(values[j], expected[j]));
  }
}

TEST_CASE("reproducible deposit: float data, and many values between flushes") {
  // Float contributions: multiples of 2^-10 up to 2^10 (at most 14
  // significant bits), a window raise in the middle (2^30 to 2^38, then
  // cancelled); the exact sum is a multiple of 2^-10 below 2^20.
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> columns(5);
  std::vector<double> exact(columns.size(), 0.0);
  for (std::size_t j = 0; j < columns.size(); ++j) {
    for (int k = 0; k < 180; ++k) {
      const double v = std::ldexp(double(std::int64_t(rng() % 16384) - 8192), -10 + int(rng() % 8));
      columns[j].push_back(v);
      exact[j] += v;  // exact
    }
    const double big = std::ldexp(1.0, 30 + int(j) * 2);
    columns[j].insert(columns[j].begin() + 90, big);
    columns[j].push_back(-big);
  }
  const auto bins = check_variants<float>(spread(columns, 997));
  const auto values = values_of(bins);
  for (std::size_t j = 0; j < columns.size(); ++j) {
    INFO("column " << j);
    CHECK(same_bits(values[j], exact[j]));
  }
}

TEST_CASE("reproducible deposit: hostile data, the same bits as one value at a time") {
  // Magnitudes 1e-30 to 1e30 with heavy cancellation: the values' low bits
  // fall below the window and are rounded, in every variant the same way.
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-30, 30);
  Table t;
  t.n = 2001;
  t.w = 67;
  for (std::int64_t i = 0; i < t.n * t.w; ++i) t.x.push_back(unit(rng) * std::pow(10.0, decade(rng)));
  const auto bins = check_variants<double>(t);
  // The bound of the method: each value loses at most half a unit of the
  // lowest bin, 2^(32 (T - 2) - 1) <= 2^-64 max|x|, and the conversion
  // rounds twice; the long double reference sum errs by at most
  // n eps sum|x|.
  const auto values = values_of(bins);
  for (int j = 0; j < t.w; ++j) {
    long double sum = 0;
    double largest = 0, magnitudes = 0;
    for (std::int64_t i = 0; i < t.n; ++i) {
      const double v = t.x[std::size_t(i) * t.w + j];
      sum += v;
      largest = std::max(largest, std::fabs(v));
      magnitudes += std::fabs(v);
    }
    const double bound = double(t.n) * std::ldexp(largest, -64) +
                         double(t.n) * double(std::numeric_limits<long double>::epsilon()) *
                             magnitudes +
                         std::ldexp(std::fabs(values[j]), -51);
    INFO("column " << j);
    CHECK(std::fabs(double(values[j] - sum)) <= bound);
  }
}

namespace {

// Blocks of B rows of an n x d table in rank-one form: sample i adds
// scale(i) * x(i, j) to coordinate j < d, scale(i) to d and value(i) to
// d + 1. Like Linear's body, it names the next block's rows for prefetching.
template <class Scalar, class Memory, int B>
struct TableRankOneBody {
  using block_type = gradsum::detail::RankOneBlock<Scalar, B>;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> x;
  Kokkos::View<Scalar*, Memory> scale, value;
  KOKKOS_FUNCTION void operator()(std::int64_t b, block_type& block) const {
    const std::int64_t first = b * B, n = std::int64_t(x.extent(0));
    block.m = n - first < B ? int(n - first) : B;
    for (int s = 0; s < block.m; ++s) {
      block.row[s] = &x(first + s, 0);
      block.scale[s] = scale(first + s);
      block.value[s] = value(first + s);
      if (first + B + s < n) block.next[s] = &x(first + B + s, 0);
    }
  }
};

struct RankOneTable {
  std::int64_t n = 0;
  int d = 0;
  std::vector<double> x, scale, value;  // x: n x d, row major
};

// The contributions of a rank-one table, one row per sample, as Scalar.
template <class Scalar>
Table contributions(const RankOneTable& r) {
  Table t;
  t.n = r.n;
  t.w = r.d + 2;
  for (std::int64_t i = 0; i < r.n; ++i) {
    const Scalar scale = Scalar(r.scale[std::size_t(i)]);
    for (int j = 0; j < r.d; ++j)
      t.x.push_back(double(Scalar(scale * Scalar(r.x[std::size_t(i) * r.d + j]))));
    t.x.push_back(double(scale));
    t.x.push_back(double(Scalar(r.value[std::size_t(i)])));
  }
  return t;
}

template <class Space, class Scalar, int B>
std::vector<std::int64_t> rank_one_bins(const RankOneTable& r, std::int64_t flush_interval,
                                        bool avx2) {
  using Memory = typename Space::memory_space;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Memory> x("x", r.n, r.d);
  Kokkos::View<Scalar*, Memory> scale("scale", r.n), value("value", r.n);
  auto hx = Kokkos::create_mirror_view(x);
  auto hs = Kokkos::create_mirror_view(scale);
  auto hv = Kokkos::create_mirror_view(value);
  for (std::int64_t i = 0; i < r.n; ++i) {
    for (int j = 0; j < r.d; ++j) hx(i, j) = Scalar(r.x[std::size_t(i) * r.d + j]);
    hs(i) = Scalar(r.scale[std::size_t(i)]);
    hv(i) = Scalar(r.value[std::size_t(i)]);
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(scale, hs);
  Kokkos::deep_copy(value, hv);
  const int w = r.d + 2;
  Kokkos::View<std::int64_t*, Memory> bins("bins", gradsum::detail::binned_work_size(w));
  gradsum::detail::reduce_binned<Scalar>(Space(), "test", (r.n + B - 1) / B, w,
                                         TableRankOneBody<Scalar, Memory, B>{x, scale, value},
                                         bins, flush_interval, avx2);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bins);
  return std::vector<std::int64_t>(hb.data(), hb.data() + gradsum::detail::binned_width * w);
}

// Rank-one blocks of 32 and of 5 samples, every backend, flush interval
// and AVX2 choice, against one contribution at a time through binned_add.
template <class Scalar>
void check_rank_one(const RankOneTable& r) {
  const auto reference = reference_bins(contributions<Scalar>(r));
  for_each_space(static_cast<Spaces*>(nullptr), [&](auto* tag) {
    using Space = std::remove_pointer_t<decltype(tag)>;
    for (std::int64_t flush : {std::int64_t(1), std::int64_t(7), gradsum::detail::max_flush_interval})
      for (bool avx2 : {false, true}) {
        INFO(gradsum::space_name<Space>() << ", d " << r.d << ", flush every " << flush
                                          << ", avx2 " << avx2);
        CHECK(rank_one_bins<Space, Scalar, 32>(r, flush, avx2) == reference);
        CHECK(rank_one_bins<Space, Scalar, 5>(r, flush, avx2) == reference);
      }
  });
}

// n x d features with magnitudes 10^-e … 10^e, scales likewise, values
// mixed in sign.
RankOneTable hostile_rank_one(std::int64_t n, int d, int e, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> decade(-e, e);
  RankOneTable r;
  r.n = n;
  r.d = d;
  for (std::int64_t i = 0; i < n * d; ++i) r.x.push_back(unit(rng) * std::pow(10.0, decade(rng)));
  for (std::int64_t i = 0; i < n; ++i) {
    r.scale.push_back(unit(rng) * std::pow(10.0, decade(rng)));
    r.value.push_back(unit(rng) * std::pow(10.0, decade(rng)));
  }
  return r;
}

}  // namespace

TEST_CASE("reproducible deposit: rank-one blocks, the same bits as one value at a time") {
  // Widths on both sides of the deposit's groups of 8 and 16 coordinates;
  // the last block partial.
  for (int d : {1, 7, 8, 16, 23, 37, 64, 70}) {
    check_rank_one<double>(hostile_rank_one(203, d, 30, std::uint64_t(d)));
    check_rank_one<float>(hostile_rank_one(203, d, 15, std::uint64_t(d) + 100));
  }
}

TEST_CASE("reproducible deposit: rank-one blocks at the edges of windows") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto r = hostile_rank_one(150, 40, 3, 11);
  // Window rises in the middle of a block, in some coordinates only:
  // sample 45 (block 1 of 32, block 9 of 5) has one huge feature, sample
  // 100 a huge scale; then a huge value of the other sign cancels them.
  r.x[45 * 40 + 3] = std::ldexp(1.0, 70);
  r.x[46 * 40 + 3] = -std::ldexp(1.0, 70);
  r.x[60 * 40 + 17] = std::ldexp(1.0, -200);  // far below every window: rounded away
  r.scale[100] = std::ldexp(1.0, 40);
  // Non-finite contributions poison their coordinates only.
  r.x[120 * 40 + 33] = nan;
  r.x[121 * 40 + 39] = inf;
  r.value[130] = -inf;
  check_rank_one<double>(r);
  const auto bins = reference_bins(contributions<double>(r));
  const auto values = values_of(bins);
  for (int j = 0; j < 42; ++j) {
    INFO("coordinate " << j);
    CHECK(std::isnan(values[std::size_t(j)]) == (j == 33 || j == 39 || j == 41));
  }
}
