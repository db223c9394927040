#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --validation F --early-stop P stops on the validation
# objective and restores the best parameters: the final validation loss is
# the best one the early-stopping line reports (to its 10 printed digits).
# Then the same run, checkpointed two epochs after its best epoch (two
# epochs of patience used) and resumed, stops at the same step with the
# same message and ends on the same parameters, bit for bit.
# usage: early_stop_restores_best.sh GRADSUM_TRAIN DATA
set -euo pipefail
train="$1" data="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base=(--data "$data" --model softmax --standardize --optimizer sgd --lr 1 --batch 16
      --validation 0.3 --seed 2 --progress off)
common=("${base[@]}" --early-stop 5)
out="$("$train" "${common[@]}" --epochs 200 --save-params "$work/straight.txt")"
echo "$out"
best="$(echo "$out" | sed -n 's/^stopped after .* validation loss has not improved for 5 epochs (best \([^ ]*\) after epoch \([0-9]*\))$/\1/p')"
epoch="$(echo "$out" | sed -n 's/^stopped after .* validation loss has not improved for 5 epochs (best \([^ ]*\) after epoch \([0-9]*\))$/\2/p')"
final="$(echo "$out" | sed -n 's/^validation loss=\([^ ]*\).*/\1/p')"
[ -n "$best" ] && [ -n "$final" ] || { echo "FAILED: no early stop or no validation line"; exit 1; }
awk -v b="$best" -v f="$final" 'BEGIN { d = b - f; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }' \
  || { echo "FAILED: best $best, final $final"; exit 1; }
echo "restored validation loss $final equals the best $best"

"$train" "${common[@]}" --epochs $((epoch + 2)) --checkpoint "$work/run.ckpt" >/dev/null
resumed="$("$train" "${common[@]}" --epochs 200 --resume "$work/run.ckpt" \
  --save-params "$work/resumed.txt")"
echo "$resumed"
diff <(grep '^stopped after\|^restored' <<<"$out") <(grep '^stopped after\|^restored' <<<"$resumed") \
  || { echo "FAILED: the resumed run stops differently"; exit 1; }
cmp -s "$work/straight.txt" "$work/resumed.txt" \
  || { echo "FAILED: resumed parameters differ"; exit 1; }
echo "resumed after epoch $((epoch + 2)): same stop, same parameters"
# Resuming without early stopping is refused, naming the reason.
status=0
"$train" "${base[@]}" --epochs 200 --resume "$work/run.ckpt" \
  >/dev/null 2>"$work/err.txt" || status=$?
cat "$work/err.txt"
[ "$status" = 1 ] && grep -q "resume with the callbacks the checkpoint was written with" "$work/err.txt" \
  || { echo "FAILED: resuming without --early-stop gave exit $status"; exit 1; }
