// SPDX-License-Identifier: Apache-2.0
// gemm() and the built-in tiled kernels (host micro-tiles and team tiles)
// against a triple loop in long double, for every transpose, float and
// double, sizes that are and are not multiples of the tiles (and past one
// chunk of k), alpha and beta (beta = 0 must not read C: it holds NaN);
// and the host BLAS called directly: products in slices of rows on
// OpenMP, a row times a matrix as gemv (a Kokkos Tools hook counts the
// regions they run in, so the sizes that should take them are seen to).

#include "test_helpers.hpp"

#include <gradsum/linalg/gemm.hpp>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace {

template <class Scalar, class Space>
using Matrix = Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Space::memory_space>;

template <class Scalar, class Space>
Matrix<Scalar, Space> random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Matrix<Scalar, Space> m("m", rows, cols);
  auto h = Kokkos::create_mirror_view(m);
  const auto v = random_vector(std::size_t(rows * cols), seed);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) h(i, j) = Scalar(v[std::size_t(i * cols + j)]);
  Kokkos::deep_copy(m, h);
  return m;
}

// The largest |C - reference| over the entries, relative to the largest
// |alpha| sum_k |op(A)_ik op(B)_kj| + |beta C_ij| (the scale of the
// rounding error).
template <class View>
double relative_error(char ta, char tb, double alpha, const View& A, const View& B, double beta,
                      const std::vector<double>& c_before, const View& C) {
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), B);
  auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), C);
  const std::size_t M = c.extent(0), N = c.extent(1);
  const std::size_t K = ta == 'N' ? a.extent(1) : a.extent(0);
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      long double sum = 0, mag = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const long double x = ta == 'N' ? a(i, k) : a(k, i);
        const long double y = tb == 'N' ? b(k, j) : b(j, k);
        sum += x * y;
        mag += std::fabs(double(x * y));
      }
      const long double before = beta == 0 ? 0 : c_before[i * N + j];
      const long double want = alpha * sum + beta * before;
      worst = std::fmax(worst, std::fabs(double(c(i, j) - want)));
      scale = std::fmax(scale, double(std::fabs(alpha) * mag + std::fabs(beta * before)));
    }
  return scale > 0 ? worst / scale : worst;
}

enum class Kernel { dispatch, host_tiles, team_tiles };

template <class Scalar, class Space>
void check_product(Kernel kernel, char ta, char tb, std::int64_t M, std::int64_t N,
                   std::int64_t K, double alpha, double beta) {
  const auto A = ta == 'N' ? random_matrix<Scalar, Space>(M, K, 1) : random_matrix<Scalar, Space>(K, M, 1);
  const auto B = tb == 'N' ? random_matrix<Scalar, Space>(K, N, 2) : random_matrix<Scalar, Space>(N, K, 2);
  auto C = random_matrix<Scalar, Space>(M, N, 3);
  std::vector<double> before(std::size_t(M * N));
  {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), C);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) before[std::size_t(i * N + j)] = double(h(i, j));
    if (beta == 0) Kokkos::deep_copy(C, std::numeric_limits<Scalar>::quiet_NaN());
  }
  const Space space;
  if (kernel == Kernel::dispatch)
    gradsum::gemm(space, ta, tb, Scalar(alpha), A, B, Scalar(beta), C);
  else
    gradsum::detail::tiled_gemm(space, ta == 'T', tb == 'T', Scalar(alpha), A, B, Scalar(beta),
                                C, M, N, K, kernel == Kernel::team_tiles);
  space.fence();
  INFO("kernel " << int(kernel) << " " << ta << tb << " M " << M << " N " << N << " K " << K
                 << " alpha " << alpha << " beta " << beta);
  // K values rounded once each, and the final alpha and beta.
  const double eps = std::numeric_limits<Scalar>::epsilon();
  CHECK(relative_error(ta, tb, alpha, A, B, beta, before, C) <= 4 * eps * double(K + 2));
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("gemm: every transpose against a triple loop", Space, gemm_products) {
  const std::int64_t sizes[][3] = {{1, 1, 1},  {6, 16, 8},   {7, 17, 9},    {37, 23, 300},
                                   {64, 10, 4096 / 8}, {2, 33, 1}, {13, 64, 257}, {3, 5, 0},
                                   {10, 65, 1100}, {1, 37, 1024}};  // (k over several chunks)
  for (Kernel kernel : {Kernel::dispatch, Kernel::host_tiles, Kernel::team_tiles})
    for (const char* t : {"NN", "TN", "NT", "TT"})
      for (const auto& s : sizes) {
        check_product<double, Space>(kernel, t[0], t[1], s[0], s[1], s[2], 1.0, 0.0);
        check_product<float, Space>(kernel, t[0], t[1], s[0], s[1], s[2], 1.0, 0.0);
        check_product<double, Space>(kernel, t[0], t[1], s[0], s[1], s[2], -0.5, 1.0);
        check_product<float, Space>(kernel, t[0], t[1], s[0], s[1], s[2], 2.0, 0.25);
      }
}
TEST_CASE_TEMPLATE_APPLY(gemm_products, Spaces);

TEST_CASE("gemm: the BLAS's slices start at multiples of 48 rows and cover every row once") {
  using gradsum::detail::blas_slices;
  using gradsum::detail::blas_slice_rows;
  using gradsum::detail::blas_slice_start;
  CHECK(blas_slice_start(1, 2, 128) == 48);  // 64 rounded to the nearest multiple
  CHECK(blas_slice_start(1, 2, 2048) == 1008);  // 1024 = 21.3 x 48
  for (std::int64_t M = 2 * blas_slice_rows; M <= 3000; M += 37)
    for (std::int64_t slices = 2; slices <= M / blas_slice_rows; slices += 1 + slices / 4) {
      INFO("M " << M << " slices " << slices);
      CHECK(blas_slice_start(0, slices, M) == 0);
      CHECK(blas_slice_start(slices, slices, M) == M);
      for (std::int64_t s = 1; s < slices; ++s) {
        const std::int64_t r = blas_slice_start(s, slices, M);
        CHECK(r % blas_slice_rows == 0);
        CHECK(r > blas_slice_start(s - 1, slices, M));
        CHECK(r < M);
      }
    }
  // Too small to cut: one call, nothing done here.
  const double a = 1, b = 1;
  double c = 0;
  CHECK_FALSE(blas_slices(Kokkos::DefaultHostExecutionSpace(), false, false, 1.0, &a, 1, &b, 1,
                          0.0, &c, 1, 1, 1, 1));
}

TEST_CASE("gemm: a product is cut into columns where its largest slice is clearly less, else rows") {
  using gradsum::detail::blas_slicing;
  const auto check = [](std::int64_t threads, std::int64_t M, std::int64_t N,
                        std::int64_t slices, bool columns) {
    INFO(threads << " threads, " << M << " x " << N);
    const auto cut = blas_slicing(threads, M, N);
    CHECK(cut.slices == slices);
    if (slices > 0) CHECK(cut.columns == columns);
  };
  // 2048 rows: 1008 + 1040 (largest 0.508 of C); 128 columns would be
  // 48 + 80 (0.625), 512 columns 240 + 272 (0.531).
  check(2, 2048, 128, 2, false);
  check(2, 2048, 512, 2, false);
  // 128 rows: 48 + 80 (0.625); 512 columns 240 + 272: columns.
  check(2, 128, 512, 2, true);
  // 128 x 128: 0.625 either way, so rows.
  check(2, 128, 128, 2, false);
  // 384 rows: 192 + 192.
  check(2, 384, 128, 2, false);
  // 2048 rows 0.508, 384 columns 192 + 192 (0.5): columns are not a tenth
  // better, so rows.
  check(2, 2048, 384, 2, false);
  // 528 rows: 288 + 240 (0.545); 96 columns 48 + 48 (0.5), not below
  // 0.9 x 0.545 = 0.491: rows. 144 rows: 48 + 96 (0.667); 0.5 < 0.6: columns.
  check(2, 528, 96, 2, false);
  check(2, 144, 96, 2, true);
  // 63 rows are one slice; 128 columns are two.
  check(2, 63, 128, 2, true);
  // Neither has two slices of 48: not cut.
  check(2, 63, 95, 0, false);
  check(1, 2048, 2048, 0, false);
  // Four threads over 200 x 1000: rows 48, 48, 48, 56 (0.28); columns
  // 240, 240, 288, 232 (0.288): rows.
  check(4, 200, 1000, 4, false);
}

#if defined(GRADSUM_HOST_BLAS)
namespace {
const char* counted_region = "";
int region_count = 0;
void count_region(const char* name) {
  if (std::strcmp(name, counted_region) == 0) ++region_count;
}

// Runs check_product for each transpose and size, in double then float,
// and returns how many of those gemm calls a Kokkos Tools hook saw enter
// the region `region`.
template <class Space, std::size_t Sizes>
int products_in_region(const char* region, std::initializer_list<const char*> transposes,
                       const std::int64_t (&sizes)[Sizes][3]) {
  counted_region = region;
  region_count = 0;
  Kokkos::Tools::Experimental::set_push_region_callback(count_region);
  for (const char* t : transposes)
    for (const auto& s : sizes) {
      check_product<double, Space>(Kernel::dispatch, t[0], t[1], s[0], s[1], s[2], 1.0, 0.0);
      check_product<float, Space>(Kernel::dispatch, t[0], t[1], s[0], s[1], s[2], 2.0, 0.25);
    }
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  return region_count;
}
}  // namespace

#if defined(GRADSUM_BLAS_ROW_SLICES)
TEST_CASE("gemm: large products on OpenMP run as BLAS calls over slices, each right") {
  using Space = Kokkos::OpenMP;
  if (Space().concurrency() < 2) return;  // one thread: one call
  const char* region = "gradsum::gemm::blas_slices";
  // At least 2^20 multiply-adds and 96 rows: M = 96 (two slices of 48), a
  // slice boundary rounded (517 rows), inner sizes of one and many chunks;
  // then slices of columns: 63 rows and 300 columns, 128 rows (48 + 80)
  // and 517 columns (240 + 277).
  const std::int64_t sliced[][3] = {{96, 128, 128}, {517, 70, 33}, {200, 37, 300},
                                    {150, 7, 1100}, {63, 300, 100}, {128, 517, 40}};
  CHECK(products_in_region<Space>(region, {"NN", "TN", "NT", "TT"}, sliced) == 6 * 4 * 2);
  // Below 2^20 multiply-adds, or fewer than 96 rows and columns: one call.
  const std::int64_t whole[][3] = {{200, 60, 80}, {95, 95, 200}, {90, 95, 300}};
  CHECK(products_in_region<Space>(region, {"NN", "TT"}, whole) == 0);
}
#endif

// A row times a matrix (a bias's column sums) is the BLAS's gemv on host
// spaces.
TEST_CASE_TEMPLATE_DEFINE("gemm: a row times a matrix is the BLAS's matrix-vector product on host "
                          "spaces, right", Space, gemm_row_vector) {
  if constexpr (Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible) {
    const char* region = "gradsum::gemm::blas_row_vector";
    const std::int64_t row[][3] = {{1, 1, 1}, {1, 37, 1024}, {1, 512, 2048}, {1, 9, 3}};
    CHECK(products_in_region<Space>(region, {"NN", "NT"}, row) == 2 * 4 * 2);
    // A transposed one-column A stays a matrix product.
    const std::int64_t column[][3] = {{1, 37, 1024}};
    CHECK(products_in_region<Space>(region, {"TN"}, column) == 0);
  }
}
TEST_CASE_TEMPLATE_APPLY(gemm_row_vector, Spaces);
#endif

TEST_CASE("gemm: mismatched sizes and transposes are errors that name them") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto A = random_matrix<double, Space>(3, 4, 1);
  const auto B = random_matrix<double, Space>(5, 2, 2);
  auto C = random_matrix<double, Space>(3, 2, 3);
  CHECK_THROWS_WITH_AS(gradsum::gemm(Space(), 'N', 'N', 1.0, A, B, 0.0, C),
                       "gradsum::gemm: op(A) is 3 x 4, op(B) 5 x 2 and C 3 x 2; expected M x K, "
                       "K x N and M x N",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::gemm(Space(), 'C', 'N', 1.0, A, B, 0.0, C),
                       "gradsum::gemm: transa must be 'N' or 'T', got 'C'", gradsum::Error);
  const std::string which = gradsum::gemm_implementation();
  CHECK((which == "kokkos-kernels" || which == "built-in"));
  CHECK(which == (GRADSUM_ENABLE_KOKKOS_KERNELS ? "kokkos-kernels" : "built-in"));
}
