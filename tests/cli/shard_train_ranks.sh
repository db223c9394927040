#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --shard-optimizer (ZeRO stage 1) on N ranks: the gradient is
# reduce-scattered (each element added in rank order at its block's owner),
# each rank updates its block of the parameters and the blocks are
# gathered, so the saved parameters are the same bytes as without sharding
# when that run sums in rank order too (one bucket of the whole gradient:
# --bucket-cap 1 GiB; on 1 and 2 ranks also one MPI_Allreduce, whose order
# is the same there), for every first-order optimizer (logistic regression),
# for a GPT with AdamW, clipping and a warm-up schedule (buckets sent during
# the backward pass, or one message), and the checkpoint file itself is the
# same bytes (it keeps the whole optimizer state). A checkpoint written
# sharded on N ranks resumes on every smaller number of ranks, sharded or
# not, to the bytes of the unsharded run resumed there. L-BFGS is refused on
# the command line. The first lines say that the state is sharded and its
# gradient reduce-scattered.
# usage: shard_train_ranks.sh MPIEXEC NUMPROC_FLAG RANKS GRADSUM_TRAIN TEXT CSV
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
mpiexec="$1" np_flag="$2" ranks="$3" train="$4" text="$5" csv="$6"
in_work_dir shard_train
plain_entries

# run NAME RANKS ARGS…: trains on RANKS ranks into NAME (saved parameters).
run() {
  local name="$1" n="$2"
  shift 2
  "$mpiexec" "$np_flag" "$n" "$train" "$@" --save-params "$name" >"$name.log" 2>&1 ||
    bad "$name: $(tail -n 3 "$name.log")"
}
# same KIND FIRST SECOND: the two files hold the same bytes.
same() {
  cmp -s "$2" "$3" || { bad "$1: $3 differs from $2"; return; }
  passed "$1: $2 and $3 are the same bytes"
}

# One bucket of the whole gradient: the unsharded runs sum in rank order.
one=(--bucket-cap 1073741824)
for optimizer in sgd momentum nesterov adagrad rmsprop adam adamw; do
  logistic=(--data "$csv" --model logistic --standardize --lr 0.05 --epochs 2 --batch 64
            --optimizer "$optimizer")
  run "$optimizer.txt" "$ranks" "${logistic[@]}" "${one[@]}"
  run "$optimizer-sharded.txt" "$ranks" "${logistic[@]}" --shard-optimizer
  same "logistic, $optimizer, $ranks ranks" "$optimizer.txt" "$optimizer-sharded.txt"
  if ((ranks <= 2)); then
    run "$optimizer-message.txt" "$ranks" "${logistic[@]}"
    same "logistic, $optimizer, one MPI_Allreduce on $ranks ranks" "$optimizer-message.txt" \
      "$optimizer-sharded.txt"
  fi
done
# Logistic regression on 30 features: 31 parameters, rank 0's block the first
# ceil(31 / ranks) (the first 31 mod ranks blocks hold one more).
grep -q "the optimizer state sharded over $ranks ranks (ZeRO stage 1): rank 0 keeps and updates that of parameters \[0, $(((31 + ranks - 1) / ranks))) of 31" \
  adamw-sharded.txt.log || bad "the first lines do not say that the optimizer state is sharded"
if ((ranks > 1)); then
  grep -q "the gradient reduce-scattered" adamw-sharded.txt.log ||
    bad "the first lines do not say that the gradient is reduce-scattered"
fi

gpt=(--text "$text" --model gpt:layers=2,heads=2,width=16,context=16 --optimizer adamw
     --lr 0.01 --batch 8 --seed 4 --clip-norm 0.5 --schedule cosine:12 --warmup 3)
run gpt.safetensors "$ranks" "${gpt[@]}" --max-steps 12 "${one[@]}"
for cap in 0 4096; do
  run "gpt$cap-sharded.safetensors" "$ranks" "${gpt[@]}" --max-steps 12 --bucket-cap "$cap" \
    --shard-optimizer
  same "gpt, bucket cap $cap, $ranks ranks" gpt.safetensors "gpt$cap-sharded.safetensors"
done

# Checkpoints after 6 steps, sharded and not: the same file.
run whole6.safetensors "$ranks" "${gpt[@]}" --max-steps 6 --checkpoint whole.ckpt "${one[@]}"
run sharded6.safetensors "$ranks" "${gpt[@]}" --max-steps 6 --checkpoint sharded.ckpt \
  --shard-optimizer --bucket-cap 0
same "gpt checkpoint after 6 steps on $ranks ranks" whole.ckpt sharded.ckpt
for ((fewer = 1; fewer < ranks; ++fewer)); do
  run "resumed$fewer.safetensors" "$fewer" "${gpt[@]}" --max-steps 12 --resume whole.ckpt \
    "${one[@]}"
  run "resumed$fewer-sharded.safetensors" "$fewer" "${gpt[@]}" --max-steps 12 \
    --resume sharded.ckpt --shard-optimizer --bucket-cap 0
  same "gpt resumed on $fewer of $ranks ranks" "resumed$fewer.safetensors" \
    "resumed$fewer-sharded.safetensors"
done

expect 2 "--shard-optimizer: shards the state of" "L-BFGS with --shard-optimizer" \
  -- "$mpiexec" "$np_flag" "$ranks" "$train" --data "$csv" --model logistic --optimizer lbfgs \
  --shard-optimizer
exit $((failed > 0))
