// SPDX-License-Identifier: Apache-2.0
// gradsum::conflicting_duplicates: planted groups of identical rows are
// found when their targets differ and only counted when they agree, in
// float and double, on every space; the answer matches a brute-force host
// comparison (a == b, or both NaN), also when every hash collides.

#include "test_helpers.hpp"

#include <gradsum/diagnostics/duplicates.hpp>

#include <limits>

using namespace gradsum_test;

namespace {

// Sets the hash mask while alive (0: every row in one bucket).
class HashMask {
 public:
  explicit HashMask(std::uint64_t mask) : saved_(gradsum::detail::duplicate_hash_mask()) {
    gradsum::detail::duplicate_hash_mask() = mask;
  }
  ~HashMask() { gradsum::detail::duplicate_hash_mask() = saved_; }
  HashMask(const HashMask&) = delete;
  HashMask& operator=(const HashMask&) = delete;

 private:
  std::uint64_t saved_;
};

struct Expected {
  std::vector<std::vector<std::int64_t>> conflicting;
  std::int64_t consistent_groups = 0, consistent_rows = 0;
};

// Equal under the documented rule, in Scalar: a == b (so -0 == +0), or both NaN.
template <class Scalar>
bool same(double a, double b) {
  const Scalar x = Scalar(a), y = Scalar(b);
  return x == y || (x != x && y != y);
}

// O(n^2) reference: each row joins the first earlier row with equal features.
template <class Scalar>
Expected brute_force(const HostProblem& p) {
  std::vector<std::int64_t> leader(std::size_t(p.n), -1);
  Expected e;
  for (std::int64_t i = 0; i < p.n; ++i)
    for (std::int64_t k = 0; k < i && leader[std::size_t(i)] < 0; ++k) {
      bool equal = leader[std::size_t(k)] < 0;
      for (int j = 0; j < p.d && equal; ++j)
        equal = same<Scalar>(p.x[std::size_t(i * p.d + j)], p.x[std::size_t(k * p.d + j)]);
      if (equal) leader[std::size_t(i)] = k;
    }
  for (std::int64_t i = 0; i < p.n; ++i) {
    if (leader[std::size_t(i)] >= 0) continue;
    std::vector<std::int64_t> group{i};
    bool conflict = false;
    for (std::int64_t k = i + 1; k < p.n; ++k)
      if (leader[std::size_t(k)] == i) {
        group.push_back(k);
        conflict = conflict || !same<Scalar>(p.y[std::size_t(k)], p.y[std::size_t(i)]);
      }
    if (group.size() < 2) continue;
    if (conflict) {
      e.conflicting.push_back(group);
    } else {
      ++e.consistent_groups;
      e.consistent_rows += std::int64_t(group.size());
    }
  }
  return e;
}

template <class Scalar>
void check_report(const gradsum::DuplicateReport& r, const Expected& e,
                  const HostProblem& p) {
  REQUIRE(r.conflicting.size() == e.conflicting.size());
  for (std::size_t g = 0; g < e.conflicting.size(); ++g) {
    CAPTURE(g);
    CHECK(r.conflicting[g].rows == e.conflicting[g]);
    REQUIRE(r.conflicting[g].targets.size() == e.conflicting[g].size());
    for (std::size_t k = 0; k < e.conflicting[g].size(); ++k) {
      const double want = double(Scalar(p.y[std::size_t(e.conflicting[g][k])]));
      const double got = r.conflicting[g].targets[k];
      CHECK((got == want || (got != got && want != want)));
    }
  }
  CHECK(r.consistent_groups == e.consistent_groups);
  CHECK(r.consistent_rows == e.consistent_rows);
}

void copy_row(HostProblem& p, std::int64_t from, std::int64_t to, double target) {
  for (int j = 0; j < p.d; ++j) p.x[std::size_t(to * p.d + j)] = p.x[std::size_t(from * p.d + j)];
  p.y[std::size_t(to)] = target;
}

template <class Scalar, class Memory>
gradsum::Dataset<Scalar, Memory> to_data(const HostProblem& p) {
  return gradsum::Dataset<Scalar, Memory>::from_host(p.n, p.d, p.x, p.y);
}

template <class Space, class Scalar>
void planted() {
  using Memory = typename Space::memory_space;
  auto p = random_problem(40, 3, Kind::multiclass, 3, 27);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  copy_row(p, 5, 17, 1);  // {5, 17, 33}: targets 0, 1, 2
  copy_row(p, 5, 33, 2);
  p.y[5] = 0;
  copy_row(p, 8, 20, p.y[8]);        // {8, 20}: one target, counted only
  copy_row(p, 10, 39, p.y[10] + 1);  // {10, 39}: the last row too
  // -0 and +0: one value.
  p.x[2 * 3 + 0] = 0.0;
  copy_row(p, 2, 3, 1);
  p.x[3 * 3 + 0] = -0.0;
  p.y[2] = 0;
  // NaNs of either sign and another payload: one value; not equal to 1.
  p.x[12 * 3 + 1] = nan;
  copy_row(p, 12, 13, 2);
  p.x[13 * 3 + 1] = -std::numeric_limits<double>::signaling_NaN();
  p.y[12] = 0;
  copy_row(p, 12, 14, 1);
  p.x[14 * 3 + 1] = 1.0;
  const Expected e{{{2, 3}, {5, 17, 33}, {10, 39}, {12, 13}}, 1, 2};
  // The planted answer is the brute-force one: no other row pairs up.
  const auto reference = brute_force<Scalar>(p);
  CHECK(reference.conflicting == e.conflicting);
  const auto data = to_data<Scalar, Memory>(p);
  const auto r = gradsum::conflicting_duplicates(Space(), data);
  check_report<Scalar>(r, e, p);
  CHECK(r.conflicting[1].targets == std::vector<double>{0, 1, 2});
  // Every row in one bucket, then two: exact comparison alone groups them.
  for (std::uint64_t mask : {0ull, 1ull}) {
    CAPTURE(mask);
    HashMask forced(mask);
    check_report<Scalar>(gradsum::conflicting_duplicates(Space(), data), e, p);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("conflicting_duplicates finds planted conflicts, counts consistent ones",
                          Space, duplicates_planted) {
  planted<Space, double>();
  planted<Space, float>();
}
TEST_CASE_TEMPLATE_APPLY(duplicates_planted, Spaces);

TEST_CASE_TEMPLATE_DEFINE("conflicting_duplicates matches a brute-force comparison", Space,
                          duplicates_random) {
  using Memory = typename Space::memory_space;
  // Features from a few values: many groups of two to a dozen rows.
  for (std::int64_t n : {0, 1, 7, 500}) {
    CAPTURE(n);
    auto p = random_problem(n, 2, Kind::binary, 2, 41 + std::uint64_t(n));
    for (auto& v : p.x) v = double(int(std::fabs(v) * 3));
    for (std::uint64_t mask : {~0ull, 0ull, 3ull}) {
      CAPTURE(mask);
      HashMask forced(mask);
      check_report<double>(
          gradsum::conflicting_duplicates(Space(), to_data<double, Memory>(p)),
          brute_force<double>(p), p);
      check_report<float>(gradsum::conflicting_duplicates(to_data<float, Memory>(p)),
                          brute_force<float>(p), p);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(duplicates_random, Spaces);

TEST_CASE_TEMPLATE_DEFINE("conflicting_duplicates compares in the data's scalar type", Space,
                          duplicates_scalar) {
  using Memory = typename Space::memory_space;
  // 1 and 1 + 1e-12 are two doubles but one float.
  HostProblem p;
  p.n = 2;
  p.d = 1;
  p.x = {1.0, 1.0 + 1e-12};
  p.y = {0, 1};
  CHECK(gradsum::conflicting_duplicates(Space(), to_data<double, Memory>(p))
            .conflicting.empty());
  const auto r = gradsum::conflicting_duplicates(Space(), to_data<float, Memory>(p));
  REQUIRE(r.conflicting.size() == 1);
  CHECK(r.conflicting[0].rows == std::vector<std::int64_t>{0, 1});
  // No features at all: every row is the same row.
  HostProblem none;
  none.n = 3;
  none.y = {1, 1, 2};
  const auto all =
      gradsum::conflicting_duplicates(Space(), to_data<double, Memory>(none));
  REQUIRE(all.conflicting.size() == 1);
  CHECK(all.conflicting[0].rows == std::vector<std::int64_t>{0, 1, 2});
  CHECK(all.conflicting[0].targets == std::vector<double>{1, 1, 2});
  // A strided Dataset (the target first in a table) reads the same rows.
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> table("table", 3, 3);
  auto h = Kokkos::create_mirror_view(table);
  const double values[3][3] = {{5, 1, 2}, {6, 1, 2}, {5, 1, 3}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) h(i, j) = values[i][j];
  Kokkos::deep_copy(table, h);
  const auto strided = gradsum::Dataset<double, Memory>::from_table(table, 0);
  const auto s = gradsum::conflicting_duplicates(Space(), strided);
  REQUIRE(s.conflicting.size() == 1);
  CHECK(s.conflicting[0].rows == std::vector<std::int64_t>{0, 1});
  CHECK(s.conflicting[0].targets == std::vector<double>{5, 6});
}
TEST_CASE_TEMPLATE_APPLY(duplicates_scalar, Spaces);
