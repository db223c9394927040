# SPDX-License-Identifier: Apache-2.0
# Shared by scripts/demo, scripts/test and scripts/bench: bootstrap, then
# configure and build gradsum in a build folder. Source it; do not run it.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${GRADSUM_JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Debian packages and a Kokkos (the user's own if Kokkos_ROOT or
# CMAKE_PREFIX_PATH names one); bootstrap_options go to scripts/bootstrap.
bootstrap_options=()
gradsum_kokkos_root() {
  "$root/scripts/bootstrap" ${bootstrap_options[@]+"${bootstrap_options[@]}"}
}

# gradsum_build BUILD_DIR [cmake options…]: configure (once) and build
# build_targets (every target when empty).
build_targets=()
gradsum_build() {
  local dir="$1"; shift
  local kokkos
  kokkos="$(gradsum_kokkos_root)"
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
        -DKokkos_ROOT="$kokkos" "$@"
  cmake --build "$dir" -j "$jobs" ${build_targets[@]+--target "${build_targets[@]}"}
}

# OpenMP defaults that Kokkos asks for; a user's own settings win.
export OMP_PROC_BIND="${OMP_PROC_BIND:-false}"
