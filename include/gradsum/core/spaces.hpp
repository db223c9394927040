// SPDX-License-Identifier: Apache-2.0
#pragma once

/// The Kokkos execution spaces this build of Kokkos enables, as a type list,
/// and their lower-case names for command lines.

#include <gradsum/core/kokkos_compat.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <utility>

namespace gradsum {
namespace detail {

#if defined(KOKKOS_ENABLE_SERIAL)
using SerialList = std::tuple<Kokkos::Serial>;
#else
using SerialList = std::tuple<>;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
using OpenMPList = std::tuple<Kokkos::OpenMP>;
#else
using OpenMPList = std::tuple<>;
#endif
#if defined(KOKKOS_ENABLE_THREADS)
using ThreadsList = std::tuple<Kokkos::Threads>;
#else
using ThreadsList = std::tuple<>;
#endif
#if defined(KOKKOS_ENABLE_CUDA)
using CudaList = std::tuple<Kokkos::Cuda>;
#else
using CudaList = std::tuple<>;
#endif

}  // namespace detail

/// std::tuple of every execution space enabled in the Kokkos build that
/// gradsum supports, host spaces first. Tests, benchmarks and gradsum-train
/// are instantiated over this list.
///
/// Defining GRADSUM_DEVICE_SPACES_ONLY in a build with a device backend
/// keeps only the device spaces (Cuda): a CUDA build then compiles each
/// test and example once, not once more for Serial, which the host builds
/// cover (scripts/cuda-build does this; scripts/gpu-check, which compares
/// the backends, does not).
///
/// Defining GRADSUM_DEFAULT_SPACE_ONLY keeps Kokkos::DefaultExecutionSpace
/// alone: a build that only needs that space (.ci/same-bits' extra builds
/// of gradsum-train) compiles each template once.
#if defined(GRADSUM_DEFAULT_SPACE_ONLY)
using ExecutionSpaces = std::tuple<Kokkos::DefaultExecutionSpace>;
#elif defined(GRADSUM_DEVICE_SPACES_ONLY) && defined(KOKKOS_ENABLE_CUDA)
using ExecutionSpaces = detail::CudaList;
#else
using ExecutionSpaces = decltype(std::tuple_cat(
    std::declval<detail::SerialList>(), std::declval<detail::OpenMPList>(),
    std::declval<detail::ThreadsList>(), std::declval<detail::CudaList>()));
#endif

static_assert(std::tuple_size<ExecutionSpaces>::value > 0,
              "gradsum: the Kokkos build enables no execution space gradsum "
              "supports (Serial, OpenMP, Threads, Cuda)");

/// Lower-case name of an execution space: "serial", "openmp", "threads", "cuda".
template <class ExecutionSpace>
std::string space_name() {
  std::string name = ExecutionSpace::name();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return name;
}

namespace detail {
template <class... Spaces>
std::string join_space_names(std::tuple<Spaces...>*) {
  std::string names;
  ((names += (names.empty() ? "" : "|") + space_name<Spaces>()), ...);
  return names;
}
}  // namespace detail

/// The enabled execution spaces' names separated by '|', e.g. "serial|openmp".
inline std::string enabled_space_names() {
  return detail::join_space_names(static_cast<ExecutionSpaces*>(nullptr));
}

}  // namespace gradsum
