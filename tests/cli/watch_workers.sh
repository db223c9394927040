#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --watch-workers: on 800 rows whose last 200 have their
# features times 10, the worker holding those rows is named, and no other
# (on one rank with 4 virtual workers, and on 4 ranks under MPI); on the
# same rows uncorrupted no worker is named; fewer than 3 workers is refused
# (exit 1, on every rank).
#
# usage: watch_workers.sh TRAIN PREDICT DATA_DIR [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" mpiexec="${4:-}" np_flag="${5:-}"
in_work_dir watch_workers
numbered_entries 0

# y = x0 - x1 + x2 - x3 + x4 + noise, deterministic features in [-1, 1].
make_rows() {
  awk -v factor="$1" 'BEGIN {
    for (i = 0; i < 800; ++i) {
      y = 0.5 * sin(3.3 * i); line = ""
      for (j = 0; j < 5; ++j) {
        x = sin(0.7 * i * (j + 1) + j); y += (j % 2 ? -x : x)
        line = line (i >= 600 ? factor * x : x) ","
      }
      print line y
    }
  }'
}
make_rows 10 >bad.csv
make_rows 1 >clean.csv
args=(--model linear --epochs 20 --lr 0.002 --progress off --watch-workers)

# named WANT DESCRIPTION -- COMMAND…: the outlier lines name exactly the
# workers WANT ('' for none) and the summary agrees.
named() {
  local want="$1" what="$2" status=0
  shift 3
  begin_entry
  timeout 120 "$@" >out.txt 2>err.txt || status=$?
  [[ $status == 0 ]] || { bad "$what: exit $status: $(head -c 400 err.txt)"; return; }
  local got
  got="$(sed -n 's/^outlier worker=\([0-9]*\) step=[0-9]* ratio=.*/\1/p' out.txt | sort -u | tr '\n' ' ')"
  [[ "$got" == "$want" ]] || { bad "$what: outliers named '$got', expected '$want'"; return; }
  grep -q '^worker 3: named in [0-9]* of 20 steps, max ratio .*, training rows \[600, 800)$' out.txt ||
    bad "$what: no summary line for worker 3: $(grep '^worker' out.txt | head -c 400)"
  passed "$what: named '$got'($(grep -c '^outlier' out.txt) lines)"
}
named "3 " "one rank, 4 virtual workers, the last one's rows corrupted" -- "$train" --data bad.csv "${args[@]}"
named "" "one rank, 4 virtual workers, clean rows" -- "$train" --data clean.csv "${args[@]}"
expect 1 "--watch-workers: compares 3 workers or more, this run has 1 (1 rank x 1); run on 3 ranks or more, or on one rank with --workers 3 or more" \
  "--watch-workers with one worker" -- "$train" --data bad.csv "${args[@]}" --workers 1
expect 1 "--watch-workers: compares 3 workers or more, this run has 2 (1 rank x 2)" \
  "--watch-workers with two workers" -- "$train" --data bad.csv "${args[@]}" --workers 2

if [[ -n "$mpiexec" ]]; then
  named "3 " "4 ranks, the last rank's rows corrupted" -- \
    "$mpiexec" "$np_flag" 4 "$train" --data bad.csv "${args[@]}"
  named "" "4 ranks, clean rows" -- "$mpiexec" "$np_flag" 4 "$train" --data clean.csv "${args[@]}"
  # Two ranks, one worker each: every rank refuses (exit 1), none waits.
  export OMPI_MCA_orte_abort_on_non_zero_status=0
  rm -f status.*
  begin_entry
  status=0
  timeout 60 "$mpiexec" "$np_flag" 2 "$here/rank_status.sh" "$train" --data bad.csv "${args[@]}" \
    >out.txt 2>err.txt || status=$?
  if ((status == 124 || status >= 128)); then
    bad "2 ranks: mpiexec hung or was killed ($status)"
  else
    grep -qF -- "--watch-workers: compares 3 workers or more, this run has 2 (2 ranks x 1)" err.txt ||
      bad "2 ranks: stderr lacks the message: $(head -c 400 err.txt)"
    for r in 0 1; do
      [[ "$(cat "status.$r" 2>/dev/null)" == 1 ]] ||
        bad "2 ranks: rank $r exited with '$(cat "status.$r" 2>/dev/null)', expected 1"
    done
    passed "every rank exit 1: --watch-workers on 2 ranks"
  fi
fi

echo "$checked checked, $failed failed"
((failed == 0))
