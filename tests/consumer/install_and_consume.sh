#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An installed gradsum serves a project of its own: BUILD is installed into
# WORK/prefix, tests/consumer is configured there with find_package(gradsum)
# (which must find Kokkos, and MPI and zlib when enabled), built and run.
# usage: install_and_consume.sh CMAKE BUILD CONSUMER_SOURCE WORK [consumer cmake options...]
set -euo pipefail
cmake="$1" build="$2" source="$3" work="$4"; shift 4
rm -rf "$work" && mkdir -p "$work"
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log"; echo "FAILED: cmake --install $build"; exit 1; }
"$cmake" -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" "$@"
"$cmake" --build "$work/build"
"$work/build/consumer"
