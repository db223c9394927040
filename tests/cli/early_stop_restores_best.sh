#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --validation F --early-stop P stops on the validation
# objective and restores the best parameters: the final validation loss is
# the best one the early-stopping line reports (to its 10 printed digits).
# usage: early_stop_restores_best.sh GRADSUM_TRAIN DATA
set -euo pipefail
train="$1" data="$2"
out="$("$train" --data "$data" --model softmax --standardize --optimizer sgd --lr 1 --epochs 200 \
  --batch 16 --validation 0.3 --seed 2 --early-stop 5 --progress off)"
echo "$out"
best="$(echo "$out" | sed -n 's/^stopped after .* validation loss has not improved for 5 epochs (best \([^ ]*\) after epoch \([0-9]*\))$/\1/p')"
final="$(echo "$out" | sed -n 's/^validation loss=\([^ ]*\).*/\1/p')"
[ -n "$best" ] && [ -n "$final" ] || { echo "FAILED: no early stop or no validation line"; exit 1; }
awk -v b="$best" -v f="$final" 'BEGIN { d = b - f; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }' \
  || { echo "FAILED: best $best, final $final"; exit 1; }
echo "restored validation loss $final equals the best $best"
