#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --plan: without a workload it prints the report of
# examples/should_i_distribute byte for byte; a 7 B model in bfloat16 with
# Adam's float32 state (112 GB, 28 GB of weights and gradients alone)
# needs 5 devices of 24 GB per copy; a job whose step takes 1 ms stays on
# one worker; --ranks-per-node and --node-bandwidth reach the bucket
# plan's assumptions; and 0 samples is a usage error (exit status 2).
# usage: plan.sh GRADSUM_TRAIN SHOULD_I_DISTRIBUTE
set -euo pipefail
train="$1" example="$2"
plan="$("$train" --plan)"
[[ "$plan" == "$("$example")" ]] || { echo "FAILED: gradsum-train --plan differs from should_i_distribute"; exit 1; }
expect() {  # expect PATTERN ARGS...: a line of --plan ARGS starts with PATTERN
  local pattern="$1"; shift
  local out; out="$("$train" --plan "$@")"
  grep -q "^$pattern" <<<"$out" || { echo "FAILED: no line '$pattern…' for --plan $*:"; echo "$out"; exit 1; }
}
expect '  strategy: model (tensor) or pipeline parallelism over at least 5 devices' \
  --samples 1e6 --batch 64 --seconds-per-sample 1e-3 --parameters 7e9 --bytes-per-value 2 \
  --optimizer-bytes 12 --memory-gb 24 --workers 8
expect '  verdict: do not distribute' \
  --samples 1e6 --batch 1000 --seconds-per-sample 1e-6 --parameters 1e6 --workers 8
expect '  assume bucket plans: 4 consecutive ranks per node, linked inside a node at 10 GB/s' \
  --samples 1e8 --batch 4096 --seconds-per-sample 1e-3 --parameters 1e9 --workers 8 \
  --ranks-per-node 4 --node-bandwidth 1e10
status=0
"$train" --plan --samples 0 --batch 1 --seconds-per-sample 1 --parameters 1 2>/dev/null || status=$?
[[ $status == 2 ]] || { echo "FAILED: --plan accepted 0 samples (exit status $status)"; exit 1; }
echo "--plan: the example's report, the memory check, the verdict and the refusal as expected"
