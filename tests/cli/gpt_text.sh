#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --text FILE --model gpt:…: a small GPT trains on a few
# kilobytes of Genesis until its validation loss (every window of the last
# tenth at stride context) is below that of guessing (log V); on N ranks, in
# double, its parameters are the single process's to rounding; bad command
# lines and texts are clear errors.
# usage: gpt_text.sh TRAIN TEXT [MPIEXEC NUMPROC_FLAG RANKS]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" text="$2" mpiexec="${3:-}" np_flag="${4:-}" ranks="${5:-}"
in_work_dir gpt_text
plain_entries

model=gpt:layers=1,heads=2,width=16,context=16
args=(--text "$text" --model "$model" --optimizer adamw --lr 0.01 --batch 8 --validation 0.1)
line="$("$train" "${args[@]}" --max-steps 150 --seed 3 | tail -n 1)"
echo "1 rank: $line"
vocabulary="$(LC_ALL=C od -An -v -tu1 "$text" | tr -s ' ' '\n' | sed '/^$/d' | sort -u | wc -l)"
loss="${line##*validation_loss=}"
awk -v l="$loss" -v v="$vocabulary" 'BEGIN {
  if (!(l > 0 && l < log(v))) { print "FAILED: validation loss " l " not below log " v; exit 1 }
  print "validation loss " l " < log " v " = " log(v) }' || failed=$((failed + 1))

if [[ -n "$mpiexec" ]]; then
  double=("${args[@]}" --precision double --max-steps 20 --seed 5)
  "$train" "${double[@]}" --save-params one.txt >/dev/null || bad "1 rank in double failed"
  "$mpiexec" "$np_flag" "$ranks" "$train" "${double[@]}" --save-params many.txt >/dev/null ||
    bad "$ranks ranks in double failed"
  paste one.txt many.txt | awk -v r="$ranks" '
    { n++; d = $1 - $2; diff += d * d; norm += $1 * $1 }
    END {
      e = sqrt(diff) / sqrt(norm)
      printf "1 and %d ranks: %d parameters, relative difference %.3g\n", r, n, e
      if (n < 1000 || !(e <= 1e-9)) exit 1 }' || bad "parameters on $ranks ranks differ"
fi

printf 'abc' >short.txt
: >empty.txt
expect 2 "--text: does not combine with --data" "--text with --data" -- \
  "$train" --text "$text" --data "$text" --model "$model"
expect 2 "--model gpt:…: trains on --text FILE" "gpt without --text" -- \
  "$train" --data "$text" --model "$model"
expect 2 "lacks context=" "gpt without a context" -- \
  "$train" --text "$text" --model gpt:layers=1,heads=2,width=16
expect 2 "width 10 is not divisible by heads 4" "width not divisible by heads" -- \
  "$train" --text "$text" --model gpt:layers=1,heads=4,width=10,context=8
expect 2 "--log: does not apply to --text" "--log with --text" -- \
  "$train" --text "$text" --model "$model" --log x.csv
expect 2 "--precision: applies to --model gpt" "--precision without gpt" -- \
  "$train" --data "$text" --precision double
expect 1 "shorter than one window of 16 + 1" "a text shorter than one window" -- \
  "$train" --text short.txt --model "$model"
expect 1 "empty.txt is empty" "an empty text" -- "$train" --text empty.txt --model "$model"
expect 1 "is not a regular file" "a folder as the text" -- "$train" --text . --model "$model"
((failed == 0)) || { echo "$failed failed"; exit 1; }
echo "all passed"
