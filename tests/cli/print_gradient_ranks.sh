#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --print-gradient prints the same objective and gradient on
# N ranks as on one (relative difference <= 1e-12).
# usage: print_gradient_ranks.sh MPIEXEC NUMPROC_FLAG RANKS GRADSUM_TRAIN DATA MODEL
set -euo pipefail
mpiexec="$1" np_flag="$2" ranks="$3" train="$4" data="$5" model="$6"
one="$("$train" --data "$data" --model "$model" --standardize --l2 0.01 --print-gradient)"
many="$("$mpiexec" "$np_flag" "$ranks" "$train" --data "$data" --model "$model" --standardize \
        --l2 0.01 --print-gradient)"
# The objective (line 1) is compared by its relative difference, the
# gradient as a vector: ||a - b|| / ||a|| (entries that are zero in exact
# arithmetic, such as balanced-class biases, are rounding noise).
paste <(echo "$one") <(echo "$many") | awk -v ranks="$ranks" '
  NF != 2 { print "line " NR ": missing value"; bad = 1 }
  NR == 1 { d = $1 - $2; s = $1; objective = (d < 0 ? -d : d) / (s < 0 ? -s : s); next }
  { n++; d = $1 - $2; diff += d * d; norm += $1 * $1 }
  END {
    gradient = sqrt(diff) / sqrt(norm)
    printf "objective %.3g, gradient %.3g relative difference between 1 and %d ranks (%d values)\n",
           objective, gradient, ranks, n
    if (bad || n < 1 || !(objective <= 1e-12) || !(gradient <= 1e-12)) { print "FAILED"; exit 1 }
  }'
