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
///
/// The chunk accumulators live in one workspace per memory space, kept
/// between calls so that a training step allocates nothing: it grows to the
/// largest chunked reduction seen so far (the first step that takes the
/// path grows it; later steps of the same size reuse it) and is released by
/// a Kokkos finalize hook, so no View outlives Kokkos::finalize. A mutex
/// guards it for the whole (blocking) chunked reduction: chunked reductions
/// on one memory space from several host threads, or on several instances
/// of one space, run one after another.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
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

/// The chunked path's workspace on one memory space: a byte buffer, viewed
/// by each reduction as its chunks x value_count accumulators, and the
/// mutex that a chunked reduction holds while it uses the buffer.
template <class MemorySpace>
struct ChunkWorkspace {
  std::mutex mutex;
  Kokkos::View<unsigned char*, MemorySpace> buffer;
  /// Whether the finalize hook that empties `buffer` is pushed for the
  /// current Kokkos session.
  bool release_pushed = false;
};

/// The process's workspace on MemorySpace. Never destroyed: a View
/// destroyed at program exit would outlive Kokkos::finalize; the finalize
/// hook empties it instead.
template <class MemorySpace>
ChunkWorkspace<MemorySpace>& chunk_workspace() {
  static auto* workspace = new ChunkWorkspace<MemorySpace>();
  return *workspace;
}

/// The bytes the workspace on MemorySpace holds now (0 before the first
/// chunked reduction and after Kokkos::finalize). For tests.
template <class MemorySpace>
std::size_t chunk_workspace_bytes() {
  auto& w = chunk_workspace<MemorySpace>();
  const std::lock_guard<std::mutex> lock(w.mutex);
  return w.buffer.extent(0);
}

/// Frees the workspace on MemorySpace (it grows again when next needed).
/// Tests call it to start afresh; Kokkos::finalize calls it through a hook
/// (`finalizing`: a later Kokkos session must push the hook again).
template <class MemorySpace>
void chunk_workspace_release(bool finalizing = false) {
  auto& w = chunk_workspace<MemorySpace>();
  const std::lock_guard<std::mutex> lock(w.mutex);
  w.buffer = Kokkos::View<unsigned char*, MemorySpace>();
  if (finalizing) w.release_pushed = false;
}

/// At least `bytes` of the workspace `w`, whose mutex the caller holds:
/// the buffer as it is when big enough, else a bigger one (the old one is
/// freed first, so the two never coexist). Its alignment (Kokkos aligns
/// every allocation to at least 64 bytes) suits any accumulator type.
template <class ExecutionSpace, class MemorySpace>
unsigned char* chunk_workspace_reserve(ChunkWorkspace<MemorySpace>& w, const ExecutionSpace& space,
                                       std::size_t bytes) {
  if (w.buffer.extent(0) < bytes) {
    if (!w.release_pushed) {
      // Runs before Kokkos finalizes its spaces, on 3.4 as on 4.x.
      Kokkos::push_finalize_hook([] { chunk_workspace_release<MemorySpace>(true); });
      w.release_pushed = true;
    }
    w.buffer = Kokkos::View<unsigned char*, MemorySpace>();
    w.buffer = Kokkos::View<unsigned char*, MemorySpace>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing,
                           std::string("gradsum::chunked_reduction::workspace")),
        bytes);
  }
  return w.buffer.data();
}

/// The chunked path with `chunks` chunks (0: as many as the space runs
/// threads at once, within chunk_budget_bytes), its accumulators in the
/// memory space's workspace (chunk_workspace), which it grows when too
/// small. Blocking; holds the workspace's mutex throughout.
template <class ExecutionSpace, class Functor, class Result = NoResult>
void chunked_reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                    const Functor& functor, std::int64_t chunks, const Result& result = {}) {
  using T = std::remove_extent_t<typename Functor::value_type>;
  using MemorySpace = typename ExecutionSpace::memory_space;
  using Work = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const int value_count = int(functor.value_count);
  const std::size_t bytes = std::size_t(value_count) * sizeof(T);
  if (chunks <= 0) {
    chunks = std::min<std::int64_t>(n, concurrency(space));
    chunks = std::min<std::int64_t>(chunks, std::int64_t(chunk_budget_bytes / std::max<std::size_t>(bytes, 1)));
  }
  chunks = std::max<std::int64_t>(chunks, 1);
  if (bytes > 0 && std::uint64_t(chunks) > std::numeric_limits<std::size_t>::max() / bytes)
    fail("gradsum::detail::chunked_reduce: ", chunks, " chunks of ", bytes,
         " bytes overflow the address space; expected fewer chunks");
  auto& workspace = chunk_workspace<MemorySpace>();
  const std::lock_guard<std::mutex> lock(workspace.mutex);
  T* data = reinterpret_cast<T*>(chunk_workspace_reserve(workspace, space, std::size_t(chunks) * bytes));
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(T) != 0)
    fail("gradsum::detail::chunked_reduce: the workspace at ", static_cast<const void*>(data),
         " is not aligned to ", alignof(T), " bytes for the accumulator type");
  const Work work(data, chunks, value_count);
  Kokkos::parallel_for(label, Policy(space, 0, chunks),
                       ChunkAccumulate<Functor, Work>{functor, work, n, chunks});
  for (std::int64_t stride = 1; stride < chunks; stride *= 2)
    Kokkos::parallel_for(label + "::join", Policy(space, 0, (chunks + 2 * stride - 1) / (2 * stride)),
                         ChunkJoin<Functor, Work>{functor, work, stride, chunks});
  Kokkos::parallel_for(label + "::final", Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1),
                       ChunkFinal<Functor, Work, Result>{functor, work, value_count, result});
  // The next caller may reuse (or regrow) the workspace once the mutex is free.
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
