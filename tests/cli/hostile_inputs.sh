#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hostile-inputs catalogue, command-line half (entries 1-79 are the
# library's, in tests/hostile_inputs.cpp): gradsum-train and gradsum-predict
# given bad flags, bad files and, under MPI, ranks that disagree. Every entry
# must end with exit status 1 (bad data or run) or 2 (bad command line), never
# a signal (status >= 128) or a hang (timeout), with a message naming the
# problem; where the program writes files, existing ones stay byte-identical.
#
# usage: hostile_inputs.sh TRAIN PREDICT DATA_DIR [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1  # checkpoint_bytes.py
train="$1" predict="$2" sklearn="$3" mpiexec="${4:-}" np_flag="${5:-}"
in_work_dir hostile_cli
numbered_entries 79

printf '1,2,0\n3,4,1\n' >two.csv
printf '1,2,3,4,0\n5,6,7,8,1\n' >four_features.csv  # labels logistic regression takes
printf '1,2,0\n3,4,1\n5,6,0\n' >three.csv
printf '1,2,0\n3,nan,1\n' >nan.csv
printf '1,2,0\n3,4,inf\n' >inf_target.csv
: >empty.csv
printf '1\n2\n3\n' >one_column.csv
printf '1,0\n2,1\n' >two_columns.csv
printf '1,2,0\n3,4,-1\n5,6,2\n' >negative_label.csv
printf '1,2,0\n3,4,1.5\n5,6,2\n' >fraction_label.csv
printf '1,2,0\n3,4,2\n' >binary_label2.csv
iris="$sklearn/iris.csv"
files=(run.log run.ckpt params.txt)

# --- the command line --------------------------------------------------------
expect 2 "--data FILE is required" "no arguments" -- "$train"
expect 2 "unknown option '--learning-rate'" "an unknown flag" -- "$train" --data two.csv --learning-rate 0.1
expect 2 "--lr: must be positive, got -0.5" "a negative learning rate" -- "$train" --data two.csv --lr -0.5
expect 2 "--lr: expected a finite number, got 'nan'" "a NaN learning rate" -- "$train" --data two.csv --lr nan
expect 2 "--epochs: expected an integer in [0, 100000000], got '-3'" "negative epochs" -- \
  "$train" --data two.csv --epochs -3
expect 2 "--batch: expected an integer" "a batch of 1e3 (not an integer)" -- "$train" --data two.csv --batch 1e3
expect 2 "--model mlp:: expected an integer in [1, 1000000], got '0'" "a hidden layer of width 0" -- \
  "$train" --data two.csv --model mlp:0
expect 2 "--schedule: expected an integer in [1, " "a cosine schedule over 0 steps" -- \
  "$train" --data two.csv --schedule cosine:0
expect 2 "--seed: expected an integer in [0, " "a negative seed" -- "$train" --data two.csv --seed -1
expect 2 "--workers: expected an integer in [1, 1000000], got '0'" "--plan for 0 workers" -- \
  "$train" --plan --workers 0 --samples 10 --batch 1 --seconds-per-sample 1 --parameters 1
expect 1 "the per-sample path takes layers of at most 256 units (GRADSUM_MLP_MAX_WIDTH)" \
  "an MLP a million units wide on the per-sample path" -- \
  "$train" --data two.csv --model mlp:1000000 --mlp-path per-sample --progress off
expect 1 "--mlp-path auto with --reduce compensated: the per-sample path takes layers" \
  "a wide MLP with a reduction that only the per-sample path serves" -- \
  "$train" --data two.csv --model mlp:300 --reduce compensated --progress off
expect 1 "--space: 'cuda' is not enabled in this build" "a space this build lacks" -- \
  "$train" --data two.csv --space cuda --progress off

# --- data files: NaN/Inf, empty, zero width, unreadable, labels out of range --
guard "${files[@]}"
expect 1 "nan.csv:2:2: non-finite value 'nan'" "NaN in a feature" -- \
  "$train" --data nan.csv --log run.log --checkpoint run.ckpt --save-params params.txt
unchanged "${files[@]}"
expect 1 "inf_target.csv:2:3: non-finite value 'inf'" "Inf in a target" -- "$train" --data inf_target.csv
expect 1 "empty.csv: no data rows" "an empty file" -- \
  "$train" --data empty.csv --log run.log --checkpoint run.ckpt --save-params params.txt
unchanged "${files[@]}"
expect 1 "one_column.csv:1: row has 1 field, but at least 2 columns are needed" \
  "zero-width data (one column)" -- "$train" --data one_column.csv
expect 1 "missing.csv: cannot open for reading: No such file or directory" "a missing file" -- \
  "$train" --data missing.csv
expect 1 ": cannot open for reading: Is a directory" "a folder as data" -- "$train" --data "$work"
expect 1 "target column 5 is out of range for 3 columns" "a target column beyond the row" -- \
  "$train" --data two.csv --target-column 5
# Labels the loss rejects are named where they are read: file:line:column.
expect 1 "negative_label.csv:2:3: target '-1' is invalid (expected an integer class label in [0, 64) for softmax_cross_entropy)" \
  "softmax label -1" -- "$train" --data negative_label.csv --model softmax --progress off
expect 1 "fraction_label.csv:2:3: target '1.5' is invalid (expected an integer class label in [0, 64)" \
  "softmax label 1.5" -- "$train" --data fraction_label.csv --model softmax --progress off
expect 1 "binary_label2.csv:2:3: target '2' is invalid (expected a target in [0, 1] for binary_cross_entropy)" \
  "logistic label 2" -- "$train" --data binary_label2.csv --model logistic --progress off
expect 1 "a test fraction of 0.9 of 3 rows leaves 3 test rows and 0 training rows" \
  "a test fraction that leaves nothing to train on" -- "$train" --data three.csv --test-fraction 0.9

# Class names are printed as they are (the classes banner, the suspect and
# duplicate lines, gradsum-predict's lines): one holding a terminal escape
# sequence is refused where it is read (the CSV file, the checkpoint), shown
# escaped, and no ESC byte reaches the terminal.
printf '1,2,ok\n3,4,a\033]0;pwned\007\n5,6,ok\n' >escape_name.csv
expect 1 "escape_name.csv:2:3: class name 'a\\x1b]0;pwned\\x07' holds control character '\\x1b' at byte 2" \
  "a class name that sets the terminal's title" -- \
  "$train" --data escape_name.csv --model logistic --progress off --duplicates --suspects 1
grep -q $'\033' out.txt err.txt && bad "the ESC byte of a class name reached the terminal"
printf '1,2,ok\n3,4,a_]0;pwned_\n5,6,ok\n' >title_names.csv
"$train" --data title_names.csv --model logistic --epochs 1 --progress off --checkpoint title.ckpt \
  >/dev/null 2>&1 || bad "could not write a checkpoint with class names to forge"
python3 - title.ckpt escape.ckpt <<'EOF'
import sys
from checkpoint_bytes import read, write
data = read(sys.argv[1])
at = data.index(b'a_]0;pwned_')
data[at:at + 11] = b'a\x1b]0;pwned\x07'
write(sys.argv[2], data)
EOF
expect 1 "'escape.ckpt': a class name 'a\\x1b]0;pwned\\x07' holds control character '\\x1b' at byte 2; the file is corrupted" \
  "gradsum-predict with a resealed checkpoint whose class name sets the terminal's title" -- \
  "$predict" --params escape.ckpt --data two.csv
grep -q $'\033' out.txt err.txt && bad "the ESC byte of a checkpoint's class name reached the terminal"

# A gzip bomb: 32 MiB of one line from 32 KiB, twice the longest line read
# by default; refused at the limit, not a bare std::bad_alloc.
python3 -c "import gzip, sys; sys.stdout.buffer.write(gzip.compress(b'0' * (1 << 25)))" >line.csv.gz
expect 1 "line.csv.gz:1: the line is longer than 16777216 bytes (CsvOptions::max_line_bytes" \
  "a gzip bomb of one 32 MiB line" -- "$train" --data line.csv.gz --progress off

# A header a million columns wide over two-column rows: read as a header (of
# another width, as scikit-learn's files have), skipped, and the run trains.
python3 -c "print(','.join('c%d' % i for i in range(1000000))); print('1,2,0'); print('3,4,1')" >wide_header.csv
number=$((number + 1)) checked=$((checked + 1)) status=0
timeout 60 "$train" --data wide_header.csv --epochs 1 --progress off >out.txt 2>err.txt || status=$?
if [[ $status == 0 ]] && grep -q "2 samples x 2 features" out.txt; then
  echo "#$number exit 0: a million-column header is skipped, the two rows train"
else
  bad "a million-column header: exit $status: $(head -c 300 err.txt)"
fi

# --- training that fails half-way: the files it would write stay as they were -
guard "${files[@]}"
expect 1 "the loss or its gradient is not finite" "a learning rate of 1e308 (overflow in training)" -- \
  "$train" --data "$iris" --model softmax --lr 1e308 --epochs 3 --progress off \
  --log run.log --checkpoint run.ckpt --save-params params.txt
unchanged "${files[@]}"
grep -q '^step,epoch,loss' run.log.partial || bad "the failed run's rows are not in run.log.partial"
expect 1 "--save-params: cannot write 'nodir/p.txt': its folder 'nodir': No such file or directory" \
  "parameters saved into a missing folder" -- \
  "$train" --data two.csv --progress off --save-params nodir/p.txt
expect 1 "gradsum::save_checkpoint: cannot write 'nodir/c.ckpt': its folder 'nodir': No such file or directory" \
  "a checkpoint into a missing folder" -- "$train" --data two.csv --progress off --checkpoint nodir/c.ckpt
grep -q "rank 0: rank 0:" err.txt && bad "the rank is named twice: $(cat err.txt)"
expect 1 "gradsum::CsvLog: cannot write 'nodir/l.csv': its folder 'nodir': No such file or directory" \
  "a log in a missing folder" -- \
  "$train" --data two.csv --progress off --log nodir/l.csv

# --- checkpoints: truncated, foreign, of another model or seed ----------------
"$train" --data "$iris" --model softmax --epochs 1 --progress off --seed 3 --checkpoint softmax.ckpt \
  >/dev/null 2>&1 || bad "could not write a checkpoint to start from"
head -c 100 softmax.ckpt >truncated.ckpt
guard run.log run.ckpt
expect 1 "'truncated.ckpt' is 100 bytes long but its header says" "--resume a truncated checkpoint" -- \
  "$train" --data "$iris" --model softmax --seed 3 --resume truncated.ckpt --log run.log --checkpoint run.ckpt
unchanged run.log run.ckpt
expect 1 "'two.csv' is not a gradsum checkpoint" "--resume a CSV file" -- \
  "$train" --data two.csv --resume two.csv --checkpoint run.ckpt
unchanged run.ckpt
expect 1 "'softmax.ckpt' was written for model softmax but this step has linear" \
  "--resume a softmax checkpoint for a logistic model" -- "$train" --data two.csv --resume softmax.ckpt
expect 1 "--resume: 'softmax.ckpt' was written with --seed 3, this run has --seed 4" \
  "--resume with another seed" -- "$train" --data "$iris" --model softmax --resume softmax.ckpt --seed 4
expect 2 "--params FILE is required" "gradsum-predict without arguments" -- "$predict"
expect 1 "two.csv: rows have 3 columns, but the model in 'softmax.ckpt' takes 4 features" \
  "gradsum-predict on data of another width" -- "$predict" --params softmax.ckpt --data two.csv
expect 1 "'truncated.ckpt' is 100 bytes long" "gradsum-predict with a truncated checkpoint" -- \
  "$predict" --params truncated.ckpt --data "$iris"
# A well-formed checkpoint (length and checksum right) of a linear model of
# 2 features that holds 1 parameter instead of 3: the sizes must be checked
# before the parameters are read.
python3 - forged.ckpt <<'EOF'
import struct, sys
from checkpoint_bytes import write
def s(t): return struct.pack('<I', len(t)) + t.encode()
body = s('double') + struct.pack('<I', 8)
for name in ['linear', 'squared_error', 'sgd', 'analytic', 'sum', 'local']: body += s(name)
body += struct.pack('<qqqq', 1, 2, 1, 1) + struct.pack('<qqqQ', 0, 0, 0, 0) + struct.pack('<q', 0)
body += struct.pack('<d', 0.5) + struct.pack('<Q', 0) * 4
data = b'GRADSUMC' + struct.pack('<IIQ', 1, 0x01020304, 24 + len(body) + 4) + body
write(sys.argv[1], data)
EOF
expect 1 "'forged.ckpt' declares 1 parameters and 1 outputs, but a linear model of 2 features has 3 and 1" \
  "gradsum-predict with a checkpoint whose sizes disagree" -- "$predict" --params forged.ckpt --data two.csv
# An MLP checkpoint (4-8-3 on iris) whose header, resealed, declares 1
# feature and 1 output: the sizes must be the network's before a row is read
# or an output written.
"$train" --data "$iris" --model mlp:8 --epochs 1 --progress off --checkpoint mlp.ckpt >/dev/null 2>&1 ||
  bad "could not write an MLP checkpoint to forge"
python3 - mlp.ckpt forged_mlp.ckpt <<'EOF'
import struct, sys
from checkpoint_bytes import after_names, read, write
data = read(sys.argv[1])
at, _ = after_names(data)
struct.pack_into('<qq', data, at + 8, 1, 1)  # features, outputs after the parameter count
write(sys.argv[2], data)
EOF
expect 1 "takes 4 features and has 3 outputs and 67 parameters, but the checkpoint declares 1, 1 and 67" \
  "gradsum-predict with an MLP checkpoint declaring 1 feature and 1 output" -- \
  "$predict" --params forged_mlp.ckpt --data two_columns.csv

# --- the loop's shape, Kokkos' threads, numbers at the edges -------------------
expect 2 "--kokkos-threads: expected --kokkos-threads=N with N an integer in [1, 512], got '--kokkos-threads=abc'" \
  "a thread count that is not a number" -- "$train" --data two.csv --kokkos-threads=abc
expect 2 "--kokkos-num-threads: expected --kokkos-num-threads=N with N an integer in [1, 512]" \
  "1000 threads, past what Kokkos' OpenMP backend holds" -- \
  "$train" --data two.csv --kokkos-num-threads=1000
expect 2 "--kokkos-threads: expected --kokkos-threads=N" "gradsum-predict with 0 threads" -- \
  "$predict" --params x.ckpt --data two.csv --kokkos-threads=0
expect 1 "two.csv:2: 2 rows x 2 features exceed the 3 values a table may hold" \
  "--max-values 3 for a file of 4 values" -- "$train" --data two.csv --max-values 3
expect 2 "--max-values: expected a positive integer, got '0'" "gradsum-predict --max-values 0" -- \
  "$predict" --params x.ckpt --data two.csv --max-values 0
expect 2 "--lr: '1e-400' is too close to 0 to be represented (it would be 0)" \
  "a learning rate that underflows to 0" -- "$train" --data two.csv --lr 1e-400
begin_entry
if "$train" --data two.csv --lr 1e-320 --epochs 1 --progress off >out.txt 2>err.txt; then
  passed "exit 0: a subnormal learning rate (1e-320) is finite and taken"
else
  bad "--lr 1e-320 refused: $(head -c 300 err.txt)"
fi
begin_entry
full="$("$train" --data two.csv --batch 2 --epochs 3 --progress off 2>&1 | grep '^final')"
huge="$("$train" --data two.csv --batch 9223372036854775807 --epochs 3 --progress off 2>&1 | grep '^final')"
if [[ -n "$full" && "$huge" == "$full" ]]; then
  passed "exit 0: --batch 9223372036854775807 trains one batch of every row, as --batch 2 does"
else
  bad "--batch 9223372036854775807 ends on '$huge', --batch 2 on '$full'"
fi
expect 1 "a median over 4 workers got a mini-batch of 2 rows on this rank, leaving 2 workers without rows" \
  "--aggregate median over more virtual workers than rows" -- \
  "$train" --data two.csv --aggregate median --workers 4 --progress off
"$train" --data "$iris" --model softmax --batch 16 --max-steps 3 --progress off --seed 3 \
  --checkpoint mid.ckpt >/dev/null 2>&1 || bad "could not write a mid-epoch checkpoint"
expect 1 "stopped after mini-batch 3 of epoch 1 of a run with batch size 16, but this run has batch size 8" \
  "--resume a mid-epoch checkpoint with another --batch" -- \
  "$train" --data "$iris" --model softmax --batch 8 --seed 3 --resume mid.ckpt --progress off
expect 1 "stopped after mini-batch 3 of epoch 1, but this run's epochs have 1 mini-batches of 200 samples" \
  "--resume a mid-epoch checkpoint with a batch past the epoch's end" -- \
  "$train" --data "$iris" --model softmax --batch 200 --seed 3 --resume mid.ckpt --progress off
printf '1,2,0\n3,4,7\n' >label7.csv
"$train" --data two.csv --epochs 1 --progress off --checkpoint logistic.ckpt >/dev/null 2>&1 ||
  bad "could not write a logistic checkpoint"
expect 1 "label7.csv: data row 2 (header not counted): target 7 is no class of the model in 'logistic.ckpt', whose classes are 0 … 1" \
  "gradsum-predict scoring a target that is no class of the model" -- \
  "$predict" --params logistic.ckpt --data label7.csv

# --- forged checkpoints: values no writer makes, resealed; untrusted input -----
# reseal IN OUT RECORD INDEX VALUE: IN with value INDEX of RECORD (host: the
# optimizer's host values, mean, scale, loop) set to VALUE, checksum made right.
reseal() { python3 "$here/checkpoint_bytes.py" "$@"; }
"$train" --data "$iris" --model softmax --optimizer lbfgs --epochs 2 --progress off \
  --checkpoint lbfgs.ckpt >/dev/null 2>&1 || bad "could not write an L-BFGS checkpoint to forge"
reseal lbfgs.ckpt head.ckpt host 0 1e6
expect 1 "'head.ckpt': L-BFGS's saved history head is 1e+06, expected an integer in [0, 9]" \
  "--resume an L-BFGS checkpoint whose history head is 1e6" -- \
  "$train" --data "$iris" --model softmax --optimizer lbfgs --epochs 4 --progress off --resume head.ckpt
reseal lbfgs.ckpt stored.ckpt host 1 2e9
expect 1 "'stored.ckpt': L-BFGS's saved number of pairs held is 2e+09, expected an integer in [0, 10]" \
  "--resume an L-BFGS checkpoint holding 2e9 pairs" -- \
  "$train" --data "$iris" --model softmax --optimizer lbfgs --epochs 4 --progress off --resume stored.ckpt
"$train" --data "$iris" --model softmax --optimizer adam --epochs 2 --progress off \
  --checkpoint adam.ckpt >/dev/null 2>&1 || bad "could not write an Adam checkpoint to forge"
# The host values of gradsum-train's first-order optimizers: the clipped-update
# count, the schedule's count, then Adam's update count t.
reseal adam.ckpt adam_t.ckpt host 2 -1e300
expect 1 "'adam_t.ckpt': the adam optimizer's saved update count t is -1e+300, expected an integer" \
  "--resume an Adam checkpoint whose update count is -1e300" -- \
  "$train" --data "$iris" --model softmax --optimizer adam --epochs 4 --progress off --resume adam_t.ckpt
expect 1 "gradsum::load_checkpoint: '/dev/zero' is not a regular file (it is a character device)" \
  "--resume /dev/zero" -- "$train" --data "$iris" --model softmax --progress off --resume /dev/zero
"$train" --data two.csv --standardize --epochs 1 --progress off --checkpoint scaled.ckpt \
  >/dev/null 2>&1 || bad "could not write a checkpoint with a scaler to forge"
reseal scaled.ckpt zero_scale.ckpt scale 1 0
expect 1 "the scaler of 'zero_scale.ckpt' has scale 0 for feature 1, expected a positive finite number" \
  "gradsum-predict with a checkpoint whose scaler divides by 0" -- \
  "$predict" --params zero_scale.ckpt --data two.csv
reseal scaled.ckpt nan_scale.ckpt scale 0 nan
expect 1 "the scaler of 'nan_scale.ckpt' has scale nan for feature 0" \
  "gradsum-predict with a checkpoint whose scaler divides by NaN" -- \
  "$predict" --params nan_scale.ckpt --data two.csv
expect 1 "has 4 features, but the scaler of 'scaled.ckpt' was fit on 2 features" \
  "--resume a 2-feature checkpoint with a scaler on 4-feature data" -- \
  "$train" --data four_features.csv --standardize --progress off --resume scaled.ckpt

# --- MPI: more ranks than samples, ranks that disagree --------------------------
if [[ -n "$mpiexec" ]]; then
  # Every rank runs to its own end (no abort of the others), and records
  # its exit status, so that each rank's status can be checked.
  export OMPI_MCA_orte_abort_on_non_zero_status=0
  rank="$here/rank_status.sh"  # records each rank's exit status
  # every_rank MESSAGE DESCRIPTION -- MPIEXEC ARGS…: each of the 2 ranks must
  # exit 1 and the message must be printed; mpiexec itself must end (its
  # status says little when the ranks are not aborted).
  every_rank() {
    local message="$1" what="$2" status=0
    shift 3
    rm -f status.*
    number=$((number + 1)) checked=$((checked + 1))
    timeout 60 "$@" >out.txt 2>err.txt || status=$?
    if ((status == 124 || status >= 128)); then bad "$what: mpiexec hung or was killed ($status)"; return; fi
    grep -qF -- "$message" err.txt || bad "$what: stderr lacks '$message': $(head -c 400 err.txt)"
    for r in 0 1; do
      [[ "$(cat "status.$r" 2>/dev/null)" == 1 ]] ||
        bad "$what: rank $r exited with '$(cat "status.$r" 2>/dev/null)', expected 1"
    done
    echo "#$number every rank exit 1: $what"
  }
  every_rank "the 2 ranks were started with different flags or data (--model differs)" \
    "a logistic model on rank 0, a linear one on rank 1" -- \
    "$mpiexec" "$np_flag" 1 "$rank" "$train" --data two.csv --model logistic --progress off : \
    "$np_flag" 1 "$rank" "$train" --data two.csv --model linear --progress off
  every_rank "rank 1: missing.csv: cannot open for reading" "the data missing on rank 1" -- \
    "$mpiexec" "$np_flag" 1 "$rank" "$train" --data two.csv --progress off : \
    "$np_flag" 1 "$rank" "$train" --data missing.csv --progress off
  every_rank "gradsum::Allreduce: the 2 ranks were started with different flags or data (training rows (features) differs)" \
    "rank 1 reading a file of another width" -- \
    "$mpiexec" "$np_flag" 1 "$rank" "$train" --data two.csv --progress off : \
    "$np_flag" 1 "$rank" "$train" --data four_features.csv --progress off
  every_rank "gradsum::Allreduce: the 2 ranks were started with different flags or data (--lr ranges from 0.10000000000000001 to 0.20000000000000001)" \
    "a learning rate of 0.1 on rank 0 and 0.2 on rank 1" -- \
    "$mpiexec" "$np_flag" 1 "$rank" "$train" --data two.csv --lr 0.1 --progress off : \
    "$np_flag" 1 "$rank" "$train" --data two.csv --lr 0.2 --progress off

  # One flag or file differing on one rank: refused by name on every rank
  # before the first step (the run's signature), never a hang.
  differ() {  # differ MESSAGE WHAT -- RANK0 ARGS… -- RANK1 ARGS…
    local message="$1" what="$2" a=() b=()
    shift 3
    while [[ "$1" != "--" ]]; do a+=("$1"); shift; done
    shift
    b=("$@")
    every_rank "the 2 ranks were started with different flags or data ($message" "$what" -- \
      "$mpiexec" "$np_flag" 1 "$rank" "$train" --progress off "${a[@]}" : \
      "$np_flag" 1 "$rank" "$train" --progress off "${b[@]}"
  }
  differ "--epochs ranges from 2 to 3)" "--epochs 2 and 3" -- \
    --data two.csv --epochs 2 -- --data two.csv --epochs 3
  differ "--batch ranges from 1 to 2)" "--batch 1 and 2" -- \
    --data two.csv --batch 1 -- --data two.csv --batch 2
  differ "--accumulate ranges from 1 to 2)" "--accumulate on one rank" -- \
    --data two.csv --batch 1 -- --data two.csv --batch 1 --accumulate 2
  differ "--max-steps ranges from 0 to 1)" "--max-steps on one rank" -- \
    --data two.csv -- --data two.csv --max-steps 1
  differ "--validation ranges from 0 to 0.5;" "--validation on one rank" -- \
    --data three.csv -- --data three.csv --validation 0.5
  differ "training rows ranges from 2 to 3;" "rank 1's file has a row more (--batch 64)" -- \
    --data two.csv --batch 64 -- --data three.csv --batch 64
  differ "--seed ranges from 0 to 1)" "--seed on one rank" -- \
    --data two.csv -- --data two.csv --seed 1
  differ "--standardize ranges from 0 to 1;" "--standardize on one rank" -- \
    --data two.csv -- --data two.csv --standardize
  differ "--checkpoint given ranges from 0 to 1)" "--checkpoint on one rank" -- \
    --data two.csv -- --data two.csv --checkpoint one_rank.ckpt
  [[ -e one_rank.ckpt ]] && bad "--checkpoint on one rank wrote a checkpoint"

  # Out of memory on rank 1 alone (a 400 MB address-space limit, a network
  # of 16 M parameters): that rank names the failure and ends the job.
  begin_entry
  status=0
  timeout 60 "$mpiexec" "$np_flag" 1 "$train" --data two.csv --model mlp:4000,4000 --progress off : \
    "$np_flag" 1 bash -c 'ulimit -v 400000; exec "$@"' limited "$train" --data two.csv \
    --model mlp:4000,4000 --progress off >out.txt 2>err.txt || status=$?
  if ((status == 0 || status == 124 || status >= 128)); then
    bad "out of memory on rank 1: mpiexec ended with $status (a hang is 124)"
  elif ! grep -q "gradsum-train: error on rank 1 of 2: " err.txt ||
       ! grep -qF "(ending every rank)" err.txt; then
    bad "out of memory on rank 1: stderr lacks the rank's message: $(head -c 400 err.txt)"
  else
    passed "exit $status: out of memory on rank 1 ends every rank with its message"
  fi

  # More ranks (3) than samples (2): the empty rank contributes nothing and
  # the run ends where the one-rank run does.
  number=$((number + 1)) checked=$((checked + 1)) status=0
  one="$("$train" --data two.csv --epochs 3 --progress off 2>&1 | grep '^final')"
  timeout 60 "$mpiexec" "$np_flag" 3 "$train" --data two.csv --epochs 3 --progress off >out.txt 2>err.txt ||
    status=$?
  if [[ $status == 0 ]] && [[ -n "$one" ]] && [[ "$(grep '^final' out.txt)" == "$one" ]]; then
    echo "#$number exit 0: 3 ranks on 2 samples end where 1 rank does ($one)"
  else
    bad "3 ranks on 2 samples: exit $status, '$(grep '^final' out.txt)' against '$one'"
  fi
fi

echo "hostile_inputs.sh: $checked command-line catalogue entries (numbered 80-$number), $failed failed"
((failed == 0))
