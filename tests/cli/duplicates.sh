#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --duplicates: a CSV with planted rows of identical features
# and different targets lists exactly those groups, by the file's data rows
# (from 1, the header not counted) and by class name where the file has
# names; identical rows with one target are only counted; a held-out split
# and (under mpiexec) 2 and 3 ranks list the same lines; training follows;
# --duplicates with --print-gradient, and ranks reading files of other
# widths, are refused.
# scikit-learn's iris has one pair of identical rows (102 and 143, both
# class 2): counted, and listed once row 143 is relabelled.
# usage: duplicates.sh GRADSUM_TRAIN DATA_FOLDER [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" data="$2" mpiexec="${3:-}" np_flag="${4:-}"
in_work_dir duplicates
plain_entries

# Data rows 1-10 (the header is not a row). Rows 2, 5 and 9 share features
# with targets 0, 1, 0; rows 3 and 10 differ only by the sign of a zero;
# rows 4 and 7 are identical with one target; row 8 is row 2 but for one
# digit.
cat >numbers.csv <<'CSV'
a,b,label
0.5,1,0
1.5,2,0
0,3,1
2,2,1
1.5,2,1
3,1,0
2,2,1
1.5,2.0001,1
1.5,2,0
-0,3,0
CSV
expected='gradsum-train: duplicates: 2 groups of rows with identical features and different targets (5 rows); 1 group of identical rows with one target (2 rows)
duplicate rows=2,5,9 targets=0,1,0
duplicate rows=3,10 targets=1,0'
run() { "$@" --epochs 2 --progress off 2>&1; }  # logistic regression by default
out="$(run "$train" --data numbers.csv --duplicates)" || bad "numbers: exit $?: $out"
[[ "$(grep -E '^(duplicate |gradsum-train: duplicates)' <<<"$out")" == "$expected" ]] ||
  bad "numbers: got: $(grep duplicate <<<"$out")"
grep -q '^final loss=' <<<"$out" || bad "numbers: training did not follow: $out"
passed "numbers: the planted groups, by file row"
# A held-out split reorders the rows: the lines still name the file's rows.
out="$(run "$train" --data numbers.csv --duplicates --test-fraction 0.3 --seed 3)" ||
  bad "split: exit $?: $out"
[[ "$(grep -E '^(duplicate |gradsum-train: duplicates)' <<<"$out")" == "$expected" ]] ||
  bad "split: got: $(grep duplicate <<<"$out")"
passed "a held-out split: the same lines"
# Class names print as names (no, yes sort as classes 0, 1).
sed -e '2,$s/,0$/,no/' -e '2,$s/,1$/,yes/' numbers.csv >names.csv
out="$(run "$train" --data names.csv --duplicates)" || bad "names: exit $?: $out"
grep -qx 'duplicate rows=2,5,9 targets=no,yes,no' <<<"$out" ||
  bad "names: got: $(grep duplicate <<<"$out")"
grep -qx 'duplicate rows=3,10 targets=yes,no' <<<"$out" || bad "names: got: $(grep duplicate <<<"$out")"
passed "class names: targets by name"
# No duplicates: the summary says so, nothing else is listed.
head -n 4 numbers.csv >clean.csv
out="$(run "$train" --data clean.csv --duplicates)" || bad "clean: exit $?: $out"
[[ "$(grep -c '^duplicate ' <<<"$out")" == 0 ]] || bad "clean: lists $(grep '^duplicate ' <<<"$out")"
grep -qx 'gradsum-train: duplicates: 0 groups of rows with identical features and different targets (0 rows); 0 groups of identical rows with one target (0 rows)' <<<"$out" ||
  bad "clean: summary: $(grep duplicates <<<"$out")"
passed "no duplicates: a summary of zeros"
# iris: the header line is not a row; data row 143 is line 144.
out="$(run "$train" --data "$data/iris.csv" --model softmax --duplicates)" || bad "iris: exit $?: $out"
grep -qx 'gradsum-train: duplicates: 0 groups of rows with identical features and different targets (0 rows); 1 group of identical rows with one target (2 rows)' <<<"$out" ||
  bad "iris: $(grep duplicates <<<"$out")"
sed '144s/,2$/,1/' "$data/iris.csv" >iris_relabelled.csv
out="$(run "$train" --data iris_relabelled.csv --model softmax --duplicates)" ||
  bad "relabelled iris: exit $?: $out"
grep -qx 'duplicate rows=102,143 targets=2,1' <<<"$out" ||
  bad "relabelled iris: $(grep duplicate <<<"$out")"
passed "iris: its one identical pair counted, and listed once relabelled"
if [[ -n "$mpiexec" ]]; then
  for ranks in 2 3; do
    out="$(run "$mpiexec" "$np_flag" "$ranks" "$train" --data numbers.csv --duplicates)" ||
      bad "$ranks ranks: exit $?: $out"
    [[ "$(grep -E '^(duplicate |gradsum-train: duplicates)' <<<"$out")" == "$expected" ]] ||
      bad "$ranks ranks: got: $(grep duplicate <<<"$out")"
  done
  passed "2 and 3 ranks: the same lines, once"
  # Rank 1 reads a file with one more column: refused alike on every rank,
  # before the duplicates are looked for.
  sed 's/$/,1/' numbers.csv >wide.csv
  expect 1 "the 2 ranks were started with different flags or data (training rows (features) differs" \
    "ranks reading files of other widths" -- \
    "$mpiexec" "$np_flag" 1 "$train" --data numbers.csv --duplicates --progress off : \
    "$np_flag" 1 "$train" --data wide.csv --duplicates --progress off
fi
expect 2 "--duplicates: does not combine with --print-gradient, whose output is the gradient alone" \
  "--duplicates with --print-gradient" -- "$train" --data numbers.csv --duplicates --print-gradient
expect 2 "unknown option 'yes' (see --help)" "--duplicates takes no value" -- \
  "$train" --data numbers.csv --duplicates yes
((failed == 0)) || exit 1
echo "duplicates: all checks passed"
