#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train: 5 epochs with --checkpoint, then --resume with --epochs 10,
# lands on exactly the parameters of an uninterrupted 10-epoch run (Adam,
# mini-batches, standardized data), on RANKS ranks (1: without mpiexec);
# and --print-gradient with --resume gives the gradient at the checkpoint's
# parameters.
# usage: resume_exact.sh RANKS GRADSUM_TRAIN DATA [MPIEXEC NUMPROC_FLAG]
set -euo pipefail
ranks="$1" train="$2" data="$3" mpiexec="${4:-}" np_flag="${5:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {
  if [ "$ranks" = 1 ]; then "$train" "$@"; else "$mpiexec" "$np_flag" "$ranks" "$train" "$@"; fi
}
common=(--data "$data" --model logistic --standardize --optimizer adam --lr 0.01 --batch 64
        --seed 3 --progress off)
run "${common[@]}" --epochs 10 --save-params "$work/straight.txt" >/dev/null
run "${common[@]}" --epochs 5 --checkpoint "$work/run.ckpt" --checkpoint-every 2 >/dev/null
run "${common[@]}" --epochs 10 --resume "$work/run.ckpt" --save-params "$work/resumed.txt" \
  --log "$work/log.csv" >"$work/out.txt"
grep -q "^resumed from '$work/run.ckpt' after epoch 5, step 45$" "$work/out.txt" \
  || { echo "FAILED: no resume line"; cat "$work/out.txt"; exit 1; }
# The log of the resumed run holds steps 46 … 90.
[ "$(sed -n 2p "$work/log.csv" | cut -d, -f1)" = 46 ] && [ "$(tail -1 "$work/log.csv" | cut -d, -f1)" = 90 ] \
  || { echo "FAILED: log rows"; cat "$work/log.csv"; exit 1; }
if cmp -s "$work/straight.txt" "$work/resumed.txt"; then
  echo "resumed 10-epoch parameters identical to the uninterrupted run on $ranks rank(s)"
else
  echo "FAILED: parameters differ"; paste "$work/straight.txt" "$work/resumed.txt"; exit 1
fi

# Least squares: Newton's one step solves the normal equations, so the
# gradient at its checkpoint vanishes (to rounding), and at the starting
# (zero) parameters it does not.
least=(--data "$data" --model linear --standardize --optimizer newton --progress off)
run "${least[@]}" --epochs 1 --checkpoint "$work/newton.ckpt" >/dev/null
run "${least[@]}" --print-gradient >"$work/start.txt"
run "${least[@]}" --epochs 1 --resume "$work/newton.ckpt" --print-gradient >"$work/trained.txt"
largest() { awk 'NR > 1 { a = $1 < 0 ? -$1 : $1; if (a > m) m = a } END { printf "%.3g", m }' "$1"; }
start="$(largest "$work/start.txt")" trained="$(largest "$work/trained.txt")"
[ "$(wc -l <"$work/trained.txt")" = 32 ] && awk -v s="$start" -v t="$trained" 'BEGIN { exit !(s > 1e-2 && t < 1e-9) }' \
  || { echo "FAILED: largest gradient entry $start at the start, $trained at Newton's solution"; exit 1; }
echo "--resume --print-gradient: largest gradient entry $start at the start, $trained at Newton's solution"
