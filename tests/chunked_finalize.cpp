// SPDX-License-Identifier: Apache-2.0
// The chunked reduction keeps its workspace (reduction/array_reduce.hpp)
// between calls; Kokkos::finalize must free it, before Kokkos finalizes
// its spaces: a View freed later is an error ("deallocated after
// Kokkos::finalize"), one never freed is a leak. A program of its own,
// since the shared test main finalizes Kokkos only on its way out. Exits
// with 0 when the sums are right and finalize freed the workspace once.

#include <gradsum/reduction/sum.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

int workspace_frees = 0;

void count_free(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                const std::uint64_t) {
  if (std::strcmp(label, "gradsum::chunked_reduction::workspace") == 0) ++workspace_frees;
}

// Adds 1 to the first of the accumulator's values.
struct CountItems {
  KOKKOS_FUNCTION void operator()(std::int64_t, double* acc) const { acc[0] += 1.0; }
};

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  bool sums_right = true;
  {
    using Space = Kokkos::DefaultExecutionSpace;
    using Memory = Space::memory_space;
    // 200 doubles per chunk, wider than a GPU thread may keep; forced onto
    // the chunked path on host spaces too. Twice: the second reuses.
    gradsum::detail::chunked_reduction_settings().force = true;
    Kokkos::View<double*, Memory> out("chunked_finalize::out", 200);
    for (std::int64_t n : {1000, 700}) {
      gradsum::Sum{}.reduce(Space(), "chunked_finalize", n, 200, CountItems{}, out);
      const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      if (host(0) != double(n) || host(199) != 0.0) {
        std::fprintf(stderr, "chunked_finalize: counted %g items of %lld\n", host(0),
                     static_cast<long long>(n));
        sums_right = false;
      }
    }
    if (gradsum::detail::chunk_workspace_bytes<Memory>() == 0) {
      std::fprintf(stderr, "chunked_finalize: the chunked path kept no workspace\n");
      sums_right = false;
    }
  }
  Kokkos::Tools::Experimental::set_deallocate_data_callback(count_free);
  Kokkos::finalize();
  if (workspace_frees != 1) {
    std::fprintf(stderr, "chunked_finalize: Kokkos::finalize freed the workspace %d time(s); expected 1\n",
                 workspace_frees);
    return 1;
  }
  return sums_right ? 0 : 1;
}
