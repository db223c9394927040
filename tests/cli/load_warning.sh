#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train warns on standard error when the machine has more runnable
# threads than cores: with one busy loop more than the machine has cores,
# a run of 2 threads warns (naming OMP_WAIT_POLICY=passive) and trains; a
# run of 1 thread, under the same load, does not warn. Only the loaded
# case can be checked: CI's machine may be busy with other tests. That is
# also why the warning cannot disturb them: every test runs on one thread
# unless it asks for more (tests/CMakeLists.txt), and quiet_threads.sh,
# which lets gradsum-train take every core, looks only for Kokkos' messages.
# usage: load_warning.sh TRAIN DATA_FOLDER
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
train="$1" data="$2"
in_work_dir load_warning
plain_entries
loops=()
trap 'kill "${loops[@]}" 2>/dev/null; rm -rf "$work"' EXIT

cores="$(nproc --all)"
for ((i = 0; i <= cores; ++i)); do
  (while :; do :; done) &
  loops+=($!)
done
sleep 0.5  # the loops are running
args=(--data "$data/iris.csv" --model softmax --epochs 1 --progress off)
OMP_NUM_THREADS=2 "$train" "${args[@]}" >out.txt 2>err.txt || bad "2 threads: exit $?: $(head -c 400 err.txt)"
if grep -q '^gradsum-train: warning: .*OMP_WAIT_POLICY=passive' err.txt; then
  echo "2 threads, $((cores + 1)) busy loops on $cores cores: $(cat err.txt)"
else
  bad "2 threads, $((cores + 1)) busy loops on $cores cores: no warning on stderr: '$(cat err.txt)'"
fi
grep -q '^final ' out.txt || bad "2 threads: training did not finish: $(tail -n 2 out.txt)"
OMP_NUM_THREADS=1 "$train" "${args[@]}" >out.txt 2>err.txt || bad "1 thread: exit $?: $(head -c 400 err.txt)"
if grep -q 'warning' err.txt; then bad "1 thread warns: $(cat err.txt)"; else echo "1 thread: no warning"; fi
((failed == 0)) || exit 1
echo "a loaded machine draws the warning, a single thread does not"
