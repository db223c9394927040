#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train reports RMSE and R^2 for the squared loss: Newton's
# least-squares fit of scikit-learn's diabetes data (442 rows, 10 features)
# has R^2 = 0.5177484222 and RMSE = 53.47612876 (scikit-learn's
# LinearRegression().score and numpy's lstsq on the same file give these);
# the test rows' scores agree with their loss (RMSE = sqrt(2 loss)); the
# validation line has them too; a classifier's run has none.
# usage: regression_scores.sh TRAIN DATA_FOLDER
set -uo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
train="$1" data="$2"
in_work_dir regression_scores
plain_entries

# The raw features and the targets side by side, as one CSV file.
paste -d ' ' <(gzip -dc "$data/diabetes_data_raw.csv.gz") <(gzip -dc "$data/diabetes_target.csv.gz") |
  tr ' ' ',' > diabetes.csv
# field NAME LINE: the value of NAME=… on LINE.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# close A B DIGITS: A and B agree to DIGITS significant digits.
close() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { e = a - b; if (e < 0) e = -e;
  m = b < 0 ? -b : b; exit !(a != "" && e <= m * 10 ^ -d) }'; }

args=(--data diabetes.csv --model linear --optimizer newton --standardize --epochs 3 --progress off)
"$train" "${args[@]}" >out.txt 2>err.txt || bad "full data: exit $?: $(head -c 400 err.txt)"
final="$(grep '^final ' out.txt)"
echo "$final"
close "$(field r2 "$final")" 0.5177484222 9 || bad "R^2 $(field r2 "$final"), expected 0.5177484222"
close "$(field rmse "$final")" 53.47612876 9 || bad "RMSE $(field rmse "$final"), expected 53.47612876"

"$train" "${args[@]}" --test-fraction 0.2 --validation 0.1 >out.txt 2>err.txt ||
  bad "held-out rows: exit $?: $(head -c 400 err.txt)"
final="$(grep '^final ' out.txt)" validation="$(grep '^validation ' out.txt)"
echo "$final"
echo "$validation"
test_loss="$(field test_loss "$final")"
close "$(field test_rmse "$final")" "$(awk -v l="$test_loss" 'BEGIN { printf "%.12g", sqrt(2 * l) }')" 8 ||
  bad "test RMSE $(field test_rmse "$final") is not sqrt(2 x test loss $test_loss)"
[[ -n "$(field test_r2 "$final")" ]] || bad "no test_r2 on the final line"
loss="$(sed -n 's/^validation loss=\([^ ]*\).*/\1/p' <<<"$validation")"
close "$(field rmse "$validation")" "$(awk -v l="$loss" 'BEGIN { printf "%.12g", sqrt(2 * l) }')" 8 ||
  bad "validation RMSE $(field rmse "$validation") is not sqrt(2 x loss $loss)"
[[ -n "$(field r2 "$validation")" ]] || bad "no r2 on the validation line"

"$train" --data "$data/iris.csv" --model softmax --epochs 1 --progress off >out.txt 2>err.txt ||
  bad "iris: exit $?"
if grep -q 'rmse=\|r2=' out.txt; then bad "a classifier's run reports RMSE or R^2: $(grep '^final' out.txt)"; fi
((failed == 0)) || exit 1
echo "RMSE and R^2 as least squares and the loss say"
