#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# examples/quickstart: the gradient summed from two workers' parts is the
# whole batch's, and gradient descent recovers the line the eight samples
# lie on, y = 2 x0 - x1 + 1, with a loss at rounding level.
# usage: quickstart.sh QUICKSTART
set -euo pipefail
out="$("$1")"
echo "$out"
parts="$(sed -n 's/^sum of parts: *//p' <<<"$out")"
whole="$(sed -n 's/^whole batch: *//p' <<<"$out")"
[[ -n "$parts" && "$parts" == "$whole" ]] || { echo "FAILED: the parts' gradient differs from the whole batch's"; exit 1; }
grep -qx 'y = 2.0000 x0 + -1.0000 x1 + 1.0000' <<<"$out" || { echo "FAILED: y = 2 x0 - x1 + 1 not recovered"; exit 1; }
awk '/^loss / { found = 1; small = $2 + 0 < 1e-20 } END { exit !(found && small) }' <<<"$out" || { echo "FAILED: the loss is not at rounding level"; exit 1; }
echo "quick start as expected"
