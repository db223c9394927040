#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --reduce reproducible: three epochs of mini-batch SGD on N
# ranks end on the same parameter bits as on one rank (the files written
# by --save-params, 17 significant digits, are identical); a robust
# --aggregate runs and agrees on every rank (the median from 3 ranks on,
# refused below); bad --reduce/--aggregate
# values exit with status 2 and name the flag.
# usage: reproducible_train_ranks.sh MPIEXEC NUMPROC_FLAG RANKS GRADSUM_TRAIN DATA
set -euo pipefail
mpiexec="$1" np_flag="$2" ranks="$3" train="$4" data="$5"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
common=(--data "$data" --model logistic --standardize --lr 0.5 --epochs 3 --batch 64
        --reduce reproducible)
"$train" "${common[@]}" --save-params "$dir/one.txt" >/dev/null
"$mpiexec" "$np_flag" "$ranks" "$train" "${common[@]}" --save-params "$dir/many.txt" >/dev/null
cmp "$dir/one.txt" "$dir/many.txt"
echo "reproducible: the same parameters on 1 and $ranks ranks"
# The median of two ranks is their mean: refused, with status 1 and the
# reason, on every rank alike (no rank left waiting); from 3 ranks it runs.
if [ "$ranks" -lt 3 ]; then
  status=0
  message="$("$mpiexec" "$np_flag" "$ranks" "$train" "${common[@]}" --aggregate median 2>&1)" \
    || status=$?
  expected="gradsum::CoordinateMedian: needs at least 3 workers, got W = $ranks"
  if [ "$status" != 1 ] || [[ "$message" != *"$expected"* ]]; then
    echo "FAILED: --aggregate median on $ranks ranks gave status $status: $message"
    exit 1
  fi
  echo "median on $ranks ranks refused: needs at least 3 workers"
else
  "$mpiexec" "$np_flag" "$ranks" "$train" "${common[@]}" --aggregate median \
    --save-params "$dir/median.txt" | tail -1
fi
for bad in "--reduce fast" "--aggregate trimmed:x" "--aggregate clip:-1" "--aggregate mean"; do
  status=0
  message="$("$train" --data "$data" $bad 2>&1)" || status=$?
  flag="${bad%% *}"
  if [ "$status" != 2 ] || [[ "$message" != *"$flag"* ]]; then
    echo "FAILED: '$bad' gave status $status: $message"
    exit 1
  fi
done
echo "bad values exit with status 2 and name the flag"
