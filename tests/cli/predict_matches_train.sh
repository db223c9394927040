#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-predict applies a checkpoint (with its scaling) to the training
# file and reproduces gradsum-train's final accuracy (softmax, iris) and
# objective (least squares: mean squared error = 2 x the objective), and an
# MLP's accuracy (iris, one tanh layer of 8, and one of 300, beyond the
# per-sample limits).
# usage: predict_matches_train.sh GRADSUM_TRAIN GRADSUM_PREDICT DATA_FOLDER
set -euo pipefail
train="$1" predict="$2" data="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
accuracy="$("$train" --data "$data/iris.csv" --model softmax --standardize --optimizer lbfgs \
  --epochs 30 --checkpoint "$work/iris.ckpt" --progress off | sed -n 's/.* accuracy=//p')"
"$predict" --params "$work/iris.ckpt" --data "$data/iris.csv" >"$work/labels.txt" 2>"$work/summary.txt"
[ "$(wc -l <"$work/labels.txt")" = 150 ] || { echo "FAILED: expected 150 predictions"; exit 1; }
grep -qx "gradsum-predict: 150 rows, accuracy $accuracy" "$work/summary.txt" \
  || { echo "FAILED: train accuracy $accuracy, predict: $(cat "$work/summary.txt")"; exit 1; }
# An MLP classifier: the checkpoint names its layers, gradsum-predict rebuilds it.
accuracy="$("$train" --data "$data/iris.csv" --model mlp:8 --activation tanh --standardize \
  --optimizer adam --lr 0.05 --batch 16 --epochs 20 --checkpoint "$work/mlp.ckpt" --progress off |
  sed -n 's/.* accuracy=//p')"
"$predict" --params "$work/mlp.ckpt" --data "$data/iris.csv" >/dev/null 2>"$work/summary.txt"
grep -qx "gradsum-predict: 150 rows, accuracy $accuracy" "$work/summary.txt" \
  || { echo "FAILED: MLP train accuracy $accuracy, predict: $(cat "$work/summary.txt")"; exit 1; }
# An MLP too wide for the per-sample path (300 units): applied layer by layer.
accuracy="$("$train" --data "$data/iris.csv" --model mlp:300 --activation tanh --standardize \
  --optimizer adam --lr 0.01 --batch 32 --epochs 5 --checkpoint "$work/wide.ckpt" --progress off |
  sed -n 's/.* accuracy=//p')"
"$predict" --params "$work/wide.ckpt" --data "$data/iris.csv" >/dev/null 2>"$work/summary.txt"
grep -qx "gradsum-predict: 150 rows, accuracy $accuracy" "$work/summary.txt" \
  || { echo "FAILED: wide MLP train accuracy $accuracy, predict: $(cat "$work/summary.txt")"; exit 1; }
loss="$("$train" --data "$data/breast_cancer.csv" --model linear --standardize --optimizer newton \
  --epochs 3 --checkpoint "$work/linear.ckpt" --progress off | sed -n 's/^final loss=\([^ ]*\).*/\1/p')"
mse="$("$predict" --params "$work/linear.ckpt" --data "$data/breast_cancer.csv" 2>&1 >/dev/null |
  sed -n 's/.*mean squared error //p')"
awk -v l="$loss" -v m="$mse" 'BEGIN { d = m - 2 * l; if (d < 0) d = -d; exit !(d <= 1e-9 * m) }' \
  || { echo "FAILED: objective $loss, mean squared error $mse"; exit 1; }
echo "predictions reproduce the accuracies and mean squared error $mse"
