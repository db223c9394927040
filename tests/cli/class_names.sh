#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Class names in the target column: iris with its labels 0, 1, 2 written as
# setosa, versicolor, virginica (which sort in that order) trains to the
# accuracy of the numeric file, the checkpoint keeps the names and
# gradsum-predict prints them, with the same accuracy; a mixed column, a
# regression on names, unknown names at prediction and (under mpiexec)
# ranks that read other names are refused with messages naming them.
# usage: class_names.sh TRAIN PREDICT DATA_FOLDER [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" predict="$2" data="$3" mpiexec="${4:-}" np_flag="${5:-}"
in_work_dir class_names
plain_entries

# The sklearn file starts with a header "150,4,setosa,versicolor,virginica".
head -n 1 "$data/iris.csv" | grep -qx '150,4,setosa,versicolor,virginica' ||
  { echo "FAILED: unexpected iris.csv header: $(head -n 1 "$data/iris.csv")"; exit 1; }
awk -F, 'BEGIN { OFS = ","; split("setosa versicolor virginica", name, " ") }
  NR == 1 { print; next } { $NF = name[$NF + 1]; print }' "$data/iris.csv" >names.csv
[[ "$(sed -n 2p names.csv)" == "5.1,3.5,1.4,0.2,setosa" ]] || bad "names.csv: $(sed -n 2p names.csv)"

args=(--model softmax --standardize --optimizer lbfgs --epochs 30 --progress off)
"$train" --data "$data/iris.csv" "${args[@]}" --checkpoint numbers.ckpt >numbers.txt 2>&1 ||
  bad "numeric labels: exit $?: $(tail -c 400 numbers.txt)"
"$train" --data names.csv "${args[@]}" --checkpoint names.ckpt >names.txt 2>&1 ||
  bad "class names: exit $?: $(tail -c 400 names.txt)"
grep -qx "gradsum-train: classes 0=setosa 1=versicolor 2=virginica" names.txt ||
  bad "the mapping is not printed: $(head -n 3 names.txt)"
accuracy="$(sed -n 's/.* accuracy=//p' numbers.txt)"
[[ -n "$accuracy" && "$(sed -n 's/.* accuracy=//p' names.txt)" == "$accuracy" ]] ||
  bad "accuracy with names '$(sed -n 's/.* accuracy=//p' names.txt)', with numbers '$accuracy'"
# The same classes in the same order: the same run, to the last digit.
[[ "$(grep '^final' names.txt)" == "$(grep '^final' numbers.txt)" ]] ||
  bad "final lines differ: '$(grep '^final' names.txt)' and '$(grep '^final' numbers.txt)'"

# gradsum-predict prints the names, and its accuracy is the training run's.
"$predict" --params names.ckpt --data names.csv >predicted.txt 2>summary.txt ||
  bad "predict: exit $?: $(cat summary.txt)"
grep -qx "gradsum-predict: 150 rows, accuracy $accuracy" summary.txt ||
  bad "predict on names: $(cat summary.txt), training accuracy $accuracy"
"$predict" --params numbers.ckpt --data "$data/iris.csv" >numbered.txt 2>/dev/null ||
  bad "predict with numbers: exit $?"
awk 'BEGIN { split("setosa versicolor virginica", name, " ") } { $1 = name[$1 + 1]; print }' \
  numbered.txt >renamed.txt
[[ "$(wc -l <predicted.txt)" == 150 ]] || bad "expected 150 predictions, got $(wc -l <predicted.txt)"
cmp -s predicted.txt renamed.txt ||
  bad "names predicted differ from the numbers' names: $(diff predicted.txt renamed.txt | head -n 4)"
# Features only (no target column): names all the same.
cut -d, -f1-4 names.csv >features.csv
"$predict" --params names.ckpt --data features.csv >features_predicted.txt 2>/dev/null ||
  bad "predict on features only: exit $?"
cmp -s features_predicted.txt predicted.txt || bad "features-only predictions differ"
echo "names: accuracy $accuracy in training and prediction, names printed"

# Refusals, with their messages.
printf '1,2,setosa\n3,4,versicolor\n5,6,2\n' >mixed.csv
expect 1 "mixed.csv:3:3: number '2' in a target column of class names (line 1 holds 'setosa'" \
  "a number among class names" -- "$train" --data mixed.csv --model softmax --progress off
printf '1,2,0\n3,4,virginica\n' >mixed2.csv
expect 1 "mixed2.csv:2:3: class name 'virginica' in a target column of numbers" \
  "a class name among numbers" -- "$train" --data mixed2.csv --model softmax --progress off
printf '1,2,a\n3,x,b\n' >bad_feature.csv
expect 1 "bad_feature.csv:2:2: non-numeric field 'x' (expected a number)" \
  "a non-numeric feature" -- "$train" --data bad_feature.csv --model softmax --progress off
expect 1 "holds class names in its target column ('setosa' …), which a regression (--model linear) cannot fit" \
  "a regression on class names" -- "$train" --data names.csv --model linear --progress off
expect 1 "holds 3 class names in its target column; logistic regression takes 2" \
  "logistic regression on 3 names" -- "$train" --data names.csv --model logistic --progress off
sed 's/,virginica$/,virginia/' names.csv >typo.csv
expect 1 "typo.csv: class 'virginia' is not one of the 3 classes of the model in 'names.ckpt'" \
  "prediction on a name the model does not know" -- "$predict" --params names.ckpt --data typo.csv
expect 1 "--resume: 'numbers.ckpt' was written for 0 class names, this run's data has 3 other ones" \
  "resuming a run on numbers with names" -- "$train" --data names.csv "${args[@]}" --epochs 31 \
  --resume numbers.ckpt
# A checkpoint whose names, resealed, are one fewer than its classes.
python3 - names.ckpt forged.ckpt <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
names = [b'setosa', b'versicolor', b'virginica']
tail = struct.pack('<I', 3) + b''.join(struct.pack('<I', len(n)) + n for n in names)
body = data[:-4]
assert body.endswith(tail)
body = body[:-len(tail)] + struct.pack('<I', 2) + tail[4:4 + 4 + 6 + 4 + 10]
body = body[:16] + struct.pack('<Q', len(body) + 4) + body[24:]
open(sys.argv[2], 'wb').write(body + struct.pack('<I', zlib.crc32(body) & 0xffffffff))
PY
expect 1 "'forged.ckpt' holds 2 class names for a model with 3 classes (loss softmax_cross_entropy); the file is corrupted" \
  "a checkpoint with fewer names than classes" -- "$predict" --params forged.ckpt --data names.csv
printf '1,a\n2,a\n' >one_name.csv
expect 1 "one_name.csv: softmax needs 2 to 64 classes; the target column names 1" \
  "a single class name" -- "$train" --data one_name.csv --model softmax --progress off
# The model has a class per name even when the held-out rows take all of
# one class (with these seeds, 0 and 5 put the one 'c' row in the test rows).
printf '0.1,a\n0.2,a\n0.3,a\n0.9,b\n1.0,b\n1.1,b\n2.0,c\n0.15,a\n0.95,b\n0.25,a\n' >few.csv
for seed in 0 1 2 3 4 5; do
  "$train" --data few.csv --model softmax --test-fraction 0.5 --seed "$seed" --epochs 2 \
    --checkpoint few.ckpt --progress off >/dev/null 2>&1 || bad "few.csv, seed $seed: exit $?"
  "$predict" --params few.ckpt --data few.csv >/dev/null 2>err.txt ||
    bad "few.csv, seed $seed: predict: $(cat err.txt)"
done
# Two classes: logistic regression, names printed by gradsum-predict.
grep -v virginica names.csv >two.csv  # the header names virginica too: gone
"$train" --data two.csv --model logistic --standardize --epochs 20 --checkpoint two.ckpt \
  --progress off >two.txt 2>&1 || bad "logistic on 2 names: exit $?: $(tail -c 300 two.txt)"
"$predict" --params two.ckpt --data two.csv 2>/dev/null | cut -d' ' -f1 | sort -u >two_names.txt
[[ "$(tr '\n' ' ' <two_names.txt)" == "setosa versicolor " ]] ||
  bad "logistic predictions name $(tr '\n' ' ' <two_names.txt)"

if [[ -n "$mpiexec" ]]; then
  many="$("$mpiexec" "$np_flag" 2 "$train" --data names.csv "${args[@]}" 2>&1)" ||
    bad "2 ranks: exit $?: $(tail -c 400 <<<"$many")"
  [[ "$(sed -n 's/.* accuracy=//p' <<<"$many")" == "$accuracy" ]] ||
    bad "2 ranks: $(grep '^final' <<<"$many"), 1 rank accuracy $accuracy"
  grep -c "^gradsum-train: classes 0=setosa 1=versicolor 2=virginica$" <<<"$many" | grep -qx 1 ||
    bad "2 ranks: the mapping is not printed once"
  # Rank 1 reads a file whose third class is named otherwise.
  sed 's/,virginica$/,virginia/' names.csv >other.csv
  expect 1 "rank 0: --data: the ranks read different class names from 'names.csv' (this rank: setosa, versicolor, virginica); every rank must read the same file" \
    "ranks reading other class names" -- \
    "$mpiexec" "$np_flag" 1 "$train" --data names.csv --model softmax --progress off : \
    "$np_flag" 1 "$train" --data other.csv --model softmax --progress off
fi
((failed == 0)) || exit 1
echo "class names: all checks passed"
