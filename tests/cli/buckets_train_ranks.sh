#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --bucket-cap on N ranks: the parameters after training are
# the same bytes for every bucket cap (one value, a few KiB, 1 MiB, the
# whole model), since each element is added in rank order whatever the
# buckets: a GPT in float (its buckets sent during the backward pass,
# the files compared byte for byte), and logistic regression with --reduce
# sum and reproducible; the same bytes again with two-level sums
# (--sum-algorithm two-level) on nodes of 1, 2 and 3 ranks, buckets or
# one bucket; and with --bucket-cap auto (the default), where the step model
# picks the cap from one timed backward pass and the measured link. On 2
# ranks, where x0 + x1 = x1 + x0, one message (--bucket-cap 0,
# MPI_Allreduce) gives those bytes too. The first lines say how the sum is
# cut.
# usage: buckets_train_ranks.sh MPIEXEC NUMPROC_FLAG RANKS GRADSUM_TRAIN TEXT CSV
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
mpiexec="$1" np_flag="$2" ranks="$3" train="$4" text="$5" csv="$6"
in_work_dir buckets_train
plain_entries

# run NAME CAP ARGS…: trains on $ranks ranks with --bucket-cap CAP into NAME.
run() {
  local name="$1" cap="$2"
  shift 2
  "$mpiexec" "$np_flag" "$ranks" "$train" "$@" --bucket-cap "$cap" --save-params "$name" \
    >"$name.log" 2>&1 || bad "$name: $(tail -n 3 "$name.log")"
}
# same KIND FILE…: every file holds the first one's bytes.
same() {
  local kind="$1" first="$2"
  shift 2
  for f in "$@"; do cmp -s "$first" "$f" || bad "$kind: $f differs from $first"; done
  passed "$kind on $ranks ranks: $first and $* are the same bytes"
}

gpt=(--text "$text" --model gpt:layers=2,heads=2,width=16,context=16 --optimizer adamw
     --lr 0.01 --batch 8 --max-steps 12 --seed 4)
for cap in 4 4096 1048576 100000000 auto; do run "gpt$cap.safetensors" "$cap" "${gpt[@]}"; done
same "gpt, float" gpt4.safetensors gpt4096.safetensors gpt1048576.safetensors \
  gpt100000000.safetensors gptauto.safetensors
grep -Eq "^gradsum-train: --bucket-cap auto: a backward pass of [0-9.e+-]+ ms on rank 0 and a link of [0-9.e+-]+ GB/s and [0-9.e+-]+ us measured; the step model picks (buckets of at most [0-9]+ bytes|one bucket after the backward pass)" \
  gptauto.safetensors.log || bad "--bucket-cap auto: the first lines do not say what the step model chose"
grep -q "the sum in buckets of at most 4096 bytes, sent while the backward pass runs" \
  gpt4096.safetensors.log || bad "the GPT's first lines do not say how the sum is cut"

for k in 1 2 3; do
  run "gpt4096-nodes$k.safetensors" 4096 "${gpt[@]}" --sum-algorithm two-level --ranks-per-node "$k"
  run "gpt0-nodes$k.safetensors" 0 "${gpt[@]}" --sum-algorithm two-level --ranks-per-node "$k"
  same "gpt, two-level on nodes of $k" gpt4.safetensors "gpt4096-nodes$k.safetensors" \
    "gpt0-nodes$k.safetensors"
done
nodes=$(((ranks + 1) / 2))
if ((nodes > 1)); then
  grep -q "each element added in rank order, in two levels over $nodes nodes" \
    gpt4096-nodes2.safetensors.log || bad "the GPT's first lines do not name the $nodes nodes"
  grep -q "the sum in one message after the backward pass, each element added in rank order, in two levels over $nodes nodes" \
    gpt0-nodes2.safetensors.log || bad "one bucket in two levels: the first lines do not say so"
fi

for reduce in sum reproducible; do
  logistic=(--data "$csv" --model logistic --standardize --lr 0.5 --epochs 2 --batch 64
            --reduce "$reduce")
  for cap in 8 4096 1048576; do run "$reduce$cap.txt" "$cap" "${logistic[@]}"; done
  run "${reduce}8-nodes2.txt" 8 "${logistic[@]}" --sum-algorithm two-level --ranks-per-node 2
  same "logistic, --reduce $reduce" "${reduce}8.txt" "${reduce}4096.txt" "${reduce}1048576.txt" \
    "${reduce}8-nodes2.txt"
done

if [[ "$ranks" == 2 ]]; then
  run gpt0.safetensors 0 "${gpt[@]}"
  run sum0.txt 0 --data "$csv" --model logistic --standardize --lr 0.5 --epochs 2 --batch 64
  same "one message and buckets, gpt" gpt0.safetensors gpt4.safetensors
  same "one message and buckets, logistic" sum0.txt sum8.txt
fi
exit $((failed > 0))
