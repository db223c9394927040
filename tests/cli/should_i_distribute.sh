#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# examples/should_i_distribute reaches both classic verdicts: the
# fine-tuning job stays on one GPU (2.5 h of work against a week of
# set-up), the language model goes to 1536 workers and must be split as
# well (its 2.88 TB of training state over 80 GB devices: 37 per copy);
# each names the bucket plan at the verdict's workers (and at 1,024) with
# its sum: flat on 8 workers (one node of 8), two-level across 192 and 128
# nodes of 8, the nodes stated once as an assumption.
# usage: should_i_distribute.sh SHOULD_I_DISTRIBUTE
set -euo pipefail
advice="$("$1")"
for line in \
  '  verdict: do not distribute: 2.51 h on one GPU, against 7.05 days at best on 8 workers' \
  '  verdict: distribute, on 1536 workers' \
  '  strategy: data parallelism: every worker holds the whole model' \
  '  strategy: model (tensor) or pipeline parallelism over at least 37 devices' \
  '  assume bucket plans: 8 consecutive ranks per node, linked inside a node at 50 GB/s' \
  '  buckets at 8 workers: the flat sum in ' \
  '  buckets at 1536 workers: the two-level sum (192 nodes of 8) in ' \
  '  buckets at 1024 workers: the two-level sum (128 nodes of 8) in '; do
  grep -q "^$line" <<<"$advice" || { echo "FAILED: no line '$line…' in:"; echo "$advice"; exit 1; }
done
echo "both classic verdicts as expected"
