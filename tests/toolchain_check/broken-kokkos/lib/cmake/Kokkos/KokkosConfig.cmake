# SPDX-License-Identifier: Apache-2.0
# A stand-in Kokkos package for the test of gradsum's toolchain check: the
# version of the known bad snapshots, and a View that crashes when destroyed,
# as Views built by GCC 12.2-12.5 from those snapshots do.
set(Kokkos_VERSION 4.6.99)
get_filename_component(_broken_kokkos_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET Kokkos::kokkos)
  add_library(Kokkos::kokkos INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_broken_kokkos_root}/include")
endif()
