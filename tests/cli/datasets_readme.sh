#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The datasets example prints exactly what the README shows, on one rank
# and (with MPI) on two, apart from the rank count.
# usage: datasets_readme.sh README DATASETS [MPIEXEC NUMPROC_FLAG]
set -euo pipefail
readme="$1" datasets="$2" mpiexec="${3:-}" np_flag="${4:-}"
expected="$(awk '/<!-- datasets output begin -->/{f=1;next} /<!-- datasets output end -->/{f=0} f' \
  "$readme" | sed '1d;$d')"
[ -n "$expected" ] || { echo "FAILED: no datasets output block in $readme"; exit 1; }
one="$(for d in diabetes breast_cancer iris wine digits; do "$datasets" "$d"; done)"
diff <(echo "$expected") <(echo "$one") || { echo "FAILED: one rank differs from the README"; exit 1; }
echo "one rank prints what the README shows"
if [ -n "$mpiexec" ]; then
  two="$(for d in diabetes breast_cancer iris wine digits; do "$mpiexec" "$np_flag" 2 "$datasets" "$d"; done)"
  diff <(echo "$expected" | sed 's/on 1 rank$/on 2 ranks/') <(echo "$two") \
    || { echo "FAILED: two ranks differ from the README"; exit 1; }
  echo "two ranks print what the README shows"
fi
