# SPDX-License-Identifier: Apache-2.0
# Configures gradsum against the stand-in broken Kokkos and checks that the
# configuration fails with the toolchain check's message (CMake wraps long
# messages, so whitespace is collapsed before matching).
file(REMOVE_RECURSE "${BUILD}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BUILD}" -DKokkos_ROOT=${KOKKOS}
          -DCMAKE_CXX_COMPILER=${CXX} -DGRADSUM_ENABLE_TESTS=OFF
          -DGRADSUM_ENABLE_EXAMPLES=OFF -DGRADSUM_ENABLE_APPS=OFF
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " text "${out} ${err}")
if(status EQUAL 0)
  message(FATAL_ERROR "configuring against a Kokkos whose Views crash succeeded:\n${out}${err}")
endif()
foreach(phrase
    "gradsum: Kokkos 4.6.99 ("
    "miscompiles Kokkos Views: a default-constructed Kokkos::View crashes when it is destroyed (the check program was killed by a signal)"
    "Fixes: use a Kokkos release"
    "remove the `constexpr` of the default constructor `SharedAllocationTracker()`")
  string(FIND "${text}" "${phrase}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the configuration failed without the phrase '${phrase}':\n${out}${err}")
  endif()
endforeach()
if(CMAKE_HOST_SYSTEM_NAME STREQUAL "Linux")
  execute_process(COMMAND "${CXX}" -dumpfullversion OUTPUT_VARIABLE version
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND "${CXX}" --version OUTPUT_VARIABLE banner)
  if(banner MATCHES "GCC|g\\+\\+" AND version VERSION_GREATER_EQUAL 12.2 AND version VERSION_LESS 12.6)
    string(FIND "${text}" "known defect of Kokkos development snapshots from mid-2025" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "GCC ${version} with Kokkos 4.6.99 was not named as the known case:\n${text}")
    endif()
  endif()
endif()
message(STATUS "rejected as expected: ${text}")
