#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# With OMP_PROC_BIND, OMP_NUM_THREADS and KOKKOS_NUM_THREADS unset,
# gradsum-train and gradsum-predict print no Kokkos warning (placement,
# oversubscription) on either stream, on 1 rank and under mpiexec on 2, and
# gradsum-train's banner reports max(1, cores / ranks on the node) threads,
# the cores counted here by nproc; a user's OMP_NUM_THREADS or
# --kokkos-threads (or --kokkos-num-threads) wins.
# usage: quiet_threads.sh TRAIN PREDICT DATA_FOLDER [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
train="$1" predict="$2" data="$3" mpiexec="${4:-}" np_flag="${5:-}"
in_work_dir quiet_threads
plain_entries
# ctest and scripts/common.sh set these; the user of this test has not.
unset_all=(env -u OMP_PROC_BIND -u OMP_NUM_THREADS -u KOKKOS_NUM_THREADS -u OMP_PLACES)
args=(--data "$data/iris.csv" --model softmax --standardize --epochs 2 --progress off)

# quiet WHAT: neither stderr (err.txt) nor stdout (out.txt, where Kokkos 3
# prints its warnings) holds a message from Kokkos.
quiet() {
  if grep -qi "kokkos::" err.txt out.txt; then
    bad "$1: $(grep -hi -m 2 "kokkos::" err.txt out.txt)"
  else
    echo "quiet: $1"
  fi
}
# threads WHAT EXPECTED: the banner (out.txt) says EXPECTED.
threads() {
  if grep -qF -- "$2" out.txt; then echo "banner has '$2': $1"; else
    bad "$1: banner lacks '$2': $(head -n 1 out.txt)"; fi
}
plural() { if (($1 == 1)); then echo "$1 $2"; else echo "$1 $2s"; fi; }

# nproc counts this process's cores (but heeds OMP_NUM_THREADS, unset here).
cores="$("${unset_all[@]}" -u OMP_THREAD_LIMIT nproc)"
expected=$((cores > 1 ? cores : 1))
"${unset_all[@]}" "$train" "${args[@]}" --checkpoint iris.ckpt >out.txt 2>err.txt ||
  bad "1 rank: exit $?: $(head -c 400 err.txt)"
quiet "gradsum-train, 1 rank"
threads "1 rank" "$(plural "$expected" thread) ($(plural "$cores" core) / 1 rank on this node)"
"${unset_all[@]}" "$predict" --params iris.ckpt --data "$data/iris.csv" >out.txt 2>err.txt ||
  bad "gradsum-predict: exit $?: $(head -c 400 err.txt)"
sed -i '/^gradsum-predict: 150 rows, accuracy/d' err.txt
quiet "gradsum-predict"

# The user's choice wins (and Kokkos still has nothing to say).
"${unset_all[@]}" OMP_NUM_THREADS=1 "$train" "${args[@]}" >out.txt 2>err.txt || bad "OMP_NUM_THREADS=1: exit $?"
quiet "OMP_NUM_THREADS=1"
threads "OMP_NUM_THREADS=1" "1 thread (set by OMP_NUM_THREADS)"
# Either spelling of Kokkos' flag, whichever Kokkos this is (3.4 knows only
# the first, 4.3 and later only the second).
for flag in --kokkos-threads --kokkos-num-threads; do
  "${unset_all[@]}" "$train" "${args[@]}" "$flag=1" >out.txt 2>err.txt || bad "$flag=1: exit $?"
  quiet "$flag=1"
  threads "$flag=1" "1 thread (set by $flag)"
  "${unset_all[@]}" "$predict" --params iris.ckpt --data "$data/iris.csv" "$flag=1" >out.txt 2>err.txt ||
    bad "gradsum-predict $flag=1: exit $?: $(head -c 400 err.txt)"
  sed -i '/^gradsum-predict: 150 rows, accuracy/d' err.txt
  quiet "gradsum-predict $flag=1"
done

if [[ -n "$mpiexec" ]]; then
  # Each rank's own cores (a launcher may bind ranks), divided by the 2 ranks.
  per_rank="$("${unset_all[@]}" "$mpiexec" "$np_flag" 2 env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc | sort -n | head -n 1)"
  expected=$((per_rank / 2 > 1 ? per_rank / 2 : 1))
  "${unset_all[@]}" "$mpiexec" "$np_flag" 2 "$train" "${args[@]}" >out.txt 2>err.txt ||
    bad "2 ranks: exit $?: $(head -c 400 err.txt)"
  quiet "gradsum-train, 2 ranks"
  threads "2 ranks" "$(plural "$expected" thread) ($(plural "$per_rank" core) / 2 ranks on this node)"
fi
((failed == 0)) || exit 1
echo "no Kokkos warnings; threads as the cores and ranks say"
