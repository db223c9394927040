// SPDX-License-Identifier: Apache-2.0
#pragma once

/// How Sum, Compensated and Reproducible run their Kokkos array reductions,
/// whatever the accumulator's size.
///
/// A Kokkos parallel_reduce gives every thread its own accumulator. On the
/// host that is a buffer per thread of any size. On a GPU the accumulators
/// of a thread block live in its shared memory, so a wide accumulator (the
/// gradient of a few hundred parameters, the Hessian of 31) cannot be
/// launched at all: "ParallelReduce<Cuda> requested too much L0 scratch
/// memory". Wide accumulators on such a space therefore take the chunked
/// path: L chunks, each one thread with its accumulator in the space's
/// global memory, the same functor's init, operator(), join and final, and
/// a pairwise tree of joins over the chunks. The result is the same sum
/// (Reproducible: the same bits, since its joins are exact).

#include <gradsum/core/kokkos_compat.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// The largest accumulator, in bytes, that a parallel_reduce gets on a space
/// whose threads cannot keep per-thread buffers of any size (GPUs: about
/// 48 KiB of shared memory for a block of at least 32 threads).
constexpr std::size_t device_accumulator_bytes = 1024;

/// The most bytes of chunk accumulators the chunked path allocates.
constexpr std::size_t chunk_budget_bytes = std::size_t(256) << 20;

/// Switches for tests: `force` sends every array reduction through the
/// chunked path, with `chunks` chunks when positive.
struct ChunkedReductionSettings {
  bool force = false;
  std::int64_t chunks = 0;
};
inline ChunkedReductionSettings& chunked_reduction_settings() {
  static ChunkedReductionSettings settings;
  return settings;
}

/// Whether a parallel_reduce on ExecutionSpace can keep an accumulator of
/// `bytes` per thread.
template <class ExecutionSpace>
bool thread_accumulator_fits(std::size_t bytes) {
  if (chunked_reduction_settings().force) return false;
  return Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible ||
         bytes <= device_accumulator_bytes;
}

template <class F, class T, class = void>
struct has_final : std::false_type {};
template <class F, class T>
struct has_final<F, T, std::void_t<decltype(std::declval<const F&>().final(std::declval<T*>()))>>
    : std::true_type {};

/// Chunk c accumulates items c, c + L, c + 2L, ... (neighbouring threads
/// read neighbouring items).
template <class Functor, class Work>
struct ChunkAccumulate {
  Functor functor;
  Work work;
  std::int64_t n;
  std::int64_t chunks;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    auto* acc = &work(c, 0);
    functor.init(acc);
    for (std::int64_t i = c; i < n; i += chunks) functor(i, acc);
  }
};

/// One level of the tree: chunk 2 s k joins chunk 2 s k + s.
template <class Functor, class Work>
struct ChunkJoin {
  Functor functor;
  Work work;
  std::int64_t stride;
  std::int64_t chunks;
  KOKKOS_FUNCTION void operator()(std::int64_t k) const {
    const std::int64_t dst = 2 * stride * k, src = dst + stride;
    if (src < chunks) functor.join(&work(dst, 0), &work(src, 0));
  }
};

/// No result View: the functor's final writes the result.
struct NoResult {};

/// The functor's final on the joined accumulator, then the copy into the
/// caller's result View (unless Result is NoResult).
template <class Functor, class Work, class Result>
struct ChunkFinal {
  Functor functor;
  Work work;
  int value_count;
  Result result;
  KOKKOS_FUNCTION void operator()(int) const {
    using T = typename Work::non_const_value_type;
    T* acc = &work(0, 0);
    if constexpr (has_final<Functor, T>::value) functor.final(acc);
    if constexpr (!std::is_same<Result, NoResult>::value) {
      const int m = int(result.extent(0)) < value_count ? int(result.extent(0)) : value_count;
      for (int j = 0; j < m; ++j) result(j) = acc[j];
    }
  }
};

/// The chunked path with `chunks` chunks (0: as many as the space runs
/// threads at once, within chunk_budget_bytes). Blocking.
template <class ExecutionSpace, class Functor, class Result = NoResult>
void chunked_reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                    const Functor& functor, std::int64_t chunks, const Result& result = {}) {
  using T = std::remove_extent_t<typename Functor::value_type>;
  using Work = Kokkos::View<T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;
  using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const int value_count = int(functor.value_count);
  const std::size_t bytes = std::size_t(value_count) * sizeof(T);
  if (chunks <= 0) {
    chunks = std::min<std::int64_t>(n, concurrency(space));
    chunks = std::min<std::int64_t>(chunks, std::int64_t(chunk_budget_bytes / std::max<std::size_t>(bytes, 1)));
  }
  chunks = std::max<std::int64_t>(chunks, 1);
  const Work work(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::chunks"),
                  chunks, value_count);
  Kokkos::parallel_for(label, Policy(space, 0, chunks),
                       ChunkAccumulate<Functor, Work>{functor, work, n, chunks});
  for (std::int64_t stride = 1; stride < chunks; stride *= 2)
    Kokkos::parallel_for(label + "::join", Policy(space, 0, (chunks + 2 * stride - 1) / (2 * stride)),
                         ChunkJoin<Functor, Work>{functor, work, stride, chunks});
  Kokkos::parallel_for(label + "::final", Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1),
                       ChunkFinal<Functor, Work, Result>{functor, work, value_count, result});
  // The chunk accumulators are freed on return.
  space.fence();
}

/// Runs a Kokkos array-reduction functor (value_type T[], a value_count
/// member, init, operator()(i, acc), join, optionally final) over items
/// [0, n): a parallel_reduce where the space can keep the accumulator per
/// thread, the chunked path otherwise. `result` is none (the functor's
/// final writes the result) or one rank-1 View. Asynchronous on the
/// parallel_reduce path, blocking on the chunked one.
template <class ExecutionSpace, class Functor, class... Result>
void array_reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                  const Functor& functor, const Result&... result) {
  static_assert(sizeof...(Result) <= 1, "array_reduce takes at most one result View");
  using T = std::remove_extent_t<typename Functor::value_type>;
  if (thread_accumulator_fits<ExecutionSpace>(std::size_t(functor.value_count) * sizeof(T))) {
    using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_reduce(label, Policy(space, 0, n), functor, result...);
  } else {
    chunked_reduce(space, label, n, functor, chunked_reduction_settings().chunks, result...);
  }
}

}  // namespace detail
}  // namespace gradsum
