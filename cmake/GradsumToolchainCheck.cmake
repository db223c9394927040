# SPDX-License-Identifier: Apache-2.0
# gradsum_check_toolchain(): stops the configuration when this Kokkos and
# compiler pair miscompile Kokkos Views, before anything is built with them.
#
# The test is the failure itself: a program that default-constructs a host
# View and destroys it. Known case: Kokkos development snapshots of mid-2025
# (KOKKOS_VERSION 40699, before upstream PR #8223) with GCC 12.2-12.5, where
# that destruction crashes (upstream issues #7464 and #8187); unit tests pass
# there, and every training program crashes when it ends.
#
# Skipped when cross-compiling (the program cannot run here) and when
# GRADSUM_SKIP_TOOLCHAIN_CHECK is ON. The result is cached per Kokkos and
# compiler, so later configurations cost nothing.

option(GRADSUM_SKIP_TOOLCHAIN_CHECK
       "Skip the configure-time check that this Kokkos and compiler pair build working Views" OFF)

function(gradsum_check_toolchain)
  if(GRADSUM_SKIP_TOOLCHAIN_CHECK OR CMAKE_CROSSCOMPILING)
    return()
  endif()
  set(_pair "Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}) with ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  string(MAKE_C_IDENTIFIER "${_pair};${CMAKE_CXX_COMPILER}" _key)
  if(DEFINED CACHE{GRADSUM_TOOLCHAIN_OK_${_key}})
    return()
  endif()
  set(_dir "${CMAKE_BINARY_DIR}/CMakeFiles/gradsum-toolchain-check")
  file(WRITE "${_dir}/view_lifetime.cpp" [=[
// Written by gradsum's configuration (cmake/GradsumToolchainCheck.cmake).
#include <Kokkos_Core.hpp>
int main() {
  { Kokkos::View<double*, Kokkos::HostSpace> unallocated; }
  return 0;
}
]=])
  message(CHECK_START "gradsum: checking that ${_pair} builds working Views")
  try_run(_run _compiled "${_dir}/build" "${_dir}/view_lifetime.cpp"
          LINK_LIBRARIES Kokkos::kokkos
          CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
          COMPILE_OUTPUT_VARIABLE _compile_log
          RUN_OUTPUT_VARIABLE _run_log)
  if(NOT _compiled)
    message(CHECK_FAIL "could not compile the check")
    message(FATAL_ERROR
      "gradsum: a program that only creates and destroys a Kokkos::View did not "
      "compile with ${_pair}. The compiler output:\n${_compile_log}\n"
      "Set GRADSUM_SKIP_TOOLCHAIN_CHECK=ON to configure anyway.")
  endif()
  if(NOT _run EQUAL 0)
    message(CHECK_FAIL "a default-constructed View crashes when destroyed")
    set(_how "exited with status ${_run}")
    if(_run STREQUAL "FAILED_TO_RUN")
      set(_how "was killed by a signal")
    endif()
    set(_known "")
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12.2
       AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12.6 AND Kokkos_VERSION VERSION_EQUAL 4.6.99)
      set(_known
        " This is the known defect of Kokkos development snapshots from mid-2025 "
        "(KOKKOS_VERSION 40699, before upstream PR #8223) with GCC 12.2-12.5: upstream "
        "issues #7464 and #8187.")
    endif()
    string(JOIN "" _known ${_known})
    message(FATAL_ERROR
      "gradsum: ${_pair} miscompiles Kokkos Views: a default-constructed "
      "Kokkos::View crashes when it is destroyed (the check program ${_how}).${_known} Every gradsum program built with this pair would crash. "
      "Fixes: use a Kokkos release (4.6.x, 4.7 or later) or a snapshot that includes "
      "upstream PR #8223; or build Kokkos and gradsum with another compiler (GCC 13 or "
      "later, or Clang); or, in your own copy of that Kokkos, remove the `constexpr` "
      "of the default constructor `SharedAllocationTracker()` in "
      "core/src/impl/Kokkos_SharedAlloc.hpp, as PR #8223 does, and reinstall it.")
  endif()
  message(CHECK_PASS "yes")
  set(GRADSUM_TOOLCHAIN_OK_${_key} ON CACHE INTERNAL "")
endfunction()
