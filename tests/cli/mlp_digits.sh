#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --model mlp on the digits: on 1 and on N ranks the held-out
# accuracy is at least 95% and the saved parameters agree (relative
# difference <= 1e-9 after 15 epochs of Adam with plain summation).
# usage: mlp_digits.sh MPIEXEC NUMPROC_FLAG RANKS GRADSUM_TRAIN DIGITS_CSV_GZ
set -euo pipefail
mpiexec="$1" np_flag="$2" ranks="$3" train="$4" digits_gz="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gzip -dc "$digits_gz" > "$work/digits.csv"
args=(--data "$work/digits.csv" --model mlp:32 --activation tanh --optimizer adam --lr 0.01
      --batch 64 --epochs 15 --standardize --l2 1e-4 --test-fraction 0.2 --seed 42)
one="$("$train" "${args[@]}" --save-params "$work/one.txt" | tail -n 1)"
many="$("$mpiexec" "$np_flag" "$ranks" "$train" "${args[@]}" --save-params "$work/many.txt" |
        tail -n 1)"
echo "1 rank:  $one"
echo "$ranks ranks: $many"
for line in "$one" "$many"; do
  accuracy="${line##*test_accuracy=}"
  awk -v a="$accuracy" 'BEGIN { if (!(a >= 0.95)) { print "held-out accuracy " a " < 0.95"; exit 1 } }'
done
paste "$work/one.txt" "$work/many.txt" | awk '
  { n++; d = $1 - $2; diff += d * d; norm += $1 * $1 }
  END {
    r = sqrt(diff) / sqrt(norm)
    printf "parameters: %d values, relative difference %.3g\n", n, r
    if (n < 2000 || !(r <= 1e-9)) { print "FAILED"; exit 1 }
  }'
