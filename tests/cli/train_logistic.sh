#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A short gradsum-train run: logistic regression on breast cancer (569
# rows, nearly linearly separable), 3 epochs of mini-batches of 64. Each
# epoch takes ceil(569 / 64) = 9 steps; the loss ends below ln 2, its value
# at the zero start, and the training accuracy at 0.95 or more.
# usage: train_logistic.sh GRADSUM_TRAIN BREAST_CANCER_CSV
set -euo pipefail
out="$("$1" --data "$2" --model logistic --standardize --lr 0.5 --epochs 3 --batch 64)"
echo "$out"
grep -q '^epoch 3/3 step 27 ' <<<"$out" || { echo "FAILED: no 'epoch 3/3 step 27' line"; exit 1; }
awk '/^final / {
       for (i = 2; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
       found = 1; good = v["loss"] < log(2) && v["accuracy"] >= 0.95
     }
     END { exit !(found && good) }' <<<"$out" \
  || { echo "FAILED: the final line does not show loss < ln 2 and accuracy >= 0.95"; exit 1; }
echo "trained as expected"
