#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An installed gradsum serves a project of its own: BUILD is installed into
# WORK/prefix, tests/consumer is configured there with find_package(gradsum)
# and only that prefix on CMAKE_PREFIX_PATH (the package finds the Kokkos,
# and MPI and zlib when enabled, it was built with), built and run. The
# flags CMake gives the consumer's own code hold no -ffp-contract or
# --fmad (linking gradsum::gradsum changes none of its arithmetic), while a
# target that links gradsum::reproducible gets -ffp-contract=off.
# usage: install_and_consume.sh CMAKE BUILD CONSUMER_SOURCE WORK [consumer cmake options...]
set -euo pipefail
cmake="$1" build="$2" source="$3" work="$4"; shift 4
rm -rf "$work" && mkdir -p "$work"
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log"; echo "FAILED: cmake --install $build"; exit 1; }
# Nothing from the environment may point at Kokkos or MPI either.
env -u CMAKE_PREFIX_PATH -u Kokkos_ROOT -u Kokkos_DIR -u MPI_HOME \
  "$cmake" -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@"

# compile_command TARGET: the command CMake compiles TARGET's main.cpp with.
compile_command() {
  grep -F "\"command\"" "$work/build/compile_commands.json" | grep -F "CMakeFiles/$1.dir/main.cpp" \
    || { echo "FAILED: no compile command for $1 in compile_commands.json"; exit 1; }
}
own="$(compile_command consumer)"
if grep -qE -- "-ffp-contract|--fmad" <<<"$own"; then
  echo "FAILED: linking gradsum::gradsum changes the consumer's own arithmetic: $own"
  exit 1
fi
echo "consumer (gradsum::gradsum) compiles without -ffp-contract or --fmad"
reproducible="$(compile_command consumer_reproducible)"
compiler_id="$(grep -h '^set(CMAKE_CXX_COMPILER_ID ' "$work"/build/CMakeFiles/*/CMakeCXXCompiler.cmake |
               sed 's/.*"\(.*\)".*/\1/')"
if [[ "$compiler_id" =~ ^(GNU|Clang|AppleClang)$ ]] && ! grep -qF -- "-ffp-contract=off" <<<"$reproducible"; then
  echo "FAILED: gradsum::reproducible does not bring -ffp-contract=off ($compiler_id): $reproducible"
  exit 1
fi
echo "consumer_reproducible (gradsum::reproducible) compiles with -ffp-contract=off ($compiler_id)"

"$cmake" --build "$work/build"
"$work/build/consumer"
