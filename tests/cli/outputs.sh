#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every file gradsum-train and gradsum-predict write goes exactly where the
# user points: never through a link planted beside it nor through another
# user's link in a sticky folder, through a link the user names to its
# target (the link kept), in place into a FIFO, a device or an open file
# named in /proc, to standard output for '-'; a regular file is replaced
# however its path is spelled (under /dev too); a folder that may not be
# written or a write that runs out of room (a full disk, a file-size limit)
# fails the run naming the path, and leaves every existing file
# byte-identical. Under MPI a failed write on rank 0 fails every rank.
#
# usage: outputs.sh TRAIN PREDICT DATA_DIR [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
# As root, in a mount namespace of its own, for the full-disk cases below.
if [[ $(id -u) == 0 && -z "${GRADSUM_OUTPUTS_NAMESPACE:-}" ]] && unshare -m true 2>/dev/null; then
  GRADSUM_OUTPUTS_NAMESPACE=1 exec unshare -m "$0" "$@"
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" predict="$2" sklearn="$3" mpiexec="${4:-}" np_flag="${5:-}"
work="$(mktemp -d "${TMPDIR:-/tmp}/gradsum_outputs_cli.XXXXXX")"
shm=""  # a folder in /dev/shm, made below
trap 'umount "$work/full" 2>/dev/null; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work" $shm' EXIT
cd "$work" || exit 1
real="$(pwd -P)"  # the folder as error messages name it, links resolved

checked=0 failed=0
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
ok() { checked=$((checked + 1)); echo "ok: $*"; }
begin_entry() { :; }
passed() { ok "$@"; }

iris="$sklearn/iris.csv"
digits="$sklearn/digits.csv.gz"
run=(--data "$iris" --model softmax --epochs 2 --progress off)

# The reference outputs, written to fresh regular files.
"$train" "${run[@]}" --save-params ref.params --log ref.log --checkpoint ref.ckpt >/dev/null ||
  { echo "FAILED: the reference run"; exit 1; }
[[ $(wc -l <ref.params) == 15 ]] || bad "the reference run saved $(wc -l <ref.params) parameters, expected 15"
# The log's rows, without the columns that differ between runs.
rows() { cut -d, -f1-5 "$1"; }

# --- links planted beside the targets are never written through -------------
printf 'precious data\n' >victim.txt
for out in p.txt l.csv c.ckpt; do
  for name in "$out.partial" "$out.tmp" ".$out.tmp"; do ln -s "$work/victim.txt" "$name"; done
done
"$train" "${run[@]}" --save-params p.txt --log l.csv --checkpoint c.ckpt >/dev/null ||
  bad "the run beside planted links failed"
[[ "$(cat victim.txt)" == "precious data" ]] || bad "a planted link was written through"
for out in p.txt l.csv c.ckpt; do
  for name in "$out.partial" "$out.tmp" ".$out.tmp"; do
    [[ -L $name && "$(readlink "$name")" == "$work/victim.txt" ]] || bad "the planted link $name was changed"
  done
done
cmp -s p.txt ref.params || bad "--save-params beside planted links wrote other values"
[[ "$(rows l.csv)" == "$(rows ref.log)" ]] || bad "--log beside planted links wrote other rows"
cmp -s c.ckpt ref.ckpt || bad "--checkpoint beside planted links wrote another checkpoint"
ok "links planted as .partial, .tmp and hidden .tmp names: the victim file and the links untouched"

# --- a link the user names: its target is updated, the link is kept ----------
mkdir real links
for out in p.txt l.csv c.ckpt; do
  printf 'old\n' >"real/$out"
  ln -s "../real/$out" "links/$out"
done
"$train" "${run[@]}" --save-params links/p.txt --log links/l.csv --checkpoint links/c.ckpt \
  >/dev/null || bad "the run through the user's links failed"
for out in p.txt l.csv c.ckpt; do
  [[ -L links/$out && "$(readlink "links/$out")" == "../real/$out" ]] || bad "the link links/$out was replaced"
done
cmp -s real/p.txt ref.params || bad "--save-params through a link did not update its target"
[[ "$(rows real/l.csv)" == "$(rows ref.log)" ]] || bad "--log through a link did not update its target"
cmp -s real/c.ckpt ref.ckpt || bad "--checkpoint through a link did not update its target"
[[ "$(ls -A links | tr '\n' ' ')" == "c.ckpt l.csv p.txt " ]] || bad "files left beside the links: $(ls -A links)"
[[ "$(ls -A real | tr '\n' ' ')" == "c.ckpt l.csv p.txt " ]] || bad "files left beside the targets: $(ls -A real)"
ok "--save-params, --log and --checkpoint through the user's links: targets updated, links kept"

# --- a FIFO is written in place; its reader gets the bytes --------------------
for out in params log ckpt; do mkfifo "fifo.$out"; done
for out in params log ckpt; do timeout 60 cat "fifo.$out" >"got.$out" & done
timeout 60 "$train" "${run[@]}" --save-params fifo.params --log fifo.log --checkpoint fifo.ckpt \
  >/dev/null || bad "the run into FIFOs failed"
wait
for out in params log ckpt; do [[ -p fifo.$out ]] || bad "fifo.$out is no longer a FIFO"; done
cmp -s got.params ref.params || bad "the --save-params FIFO's reader got other bytes"
[[ "$(rows got.log)" == "$(rows ref.log)" ]] || bad "the --log FIFO's reader got other rows"
cmp -s got.ckpt ref.ckpt || bad "the --checkpoint FIFO's reader got another checkpoint"
ok "FIFOs with readers: each reader got the bytes, the FIFOs are still FIFOs"

# --- by the file's type, never its name ----------------------------------------
# A regular file in /dev/shm is replaced: a checkpoint written over the one
# the run resumed from is one checkpoint, and loads again.
plain=(--data "$iris" --model softmax --progress off)
if [[ -d /dev/shm && -w /dev/shm ]]; then
  shm="$(mktemp -d /dev/shm/gradsum_outputs_cli.XXXXXX)"
  "$train" "${plain[@]}" --epochs 2 --checkpoint "$shm/run.ckpt" --save-params "$shm/p.txt" \
    >/dev/null || bad "the run into /dev/shm failed"
  for epochs in 4 6; do
    "$train" "${plain[@]}" --epochs $epochs --resume "$shm/run.ckpt" --checkpoint "$shm/run.ckpt" \
      --save-params "$shm/p.txt" >/dev/null 2>err.txt ||
      bad "--resume and --checkpoint $shm/run.ckpt, --epochs $epochs: $(head -c 300 err.txt)"
  done
  [[ $(wc -c <"$shm/run.ckpt") == $(wc -c <ref.ckpt) ]] ||
    bad "$shm/run.ckpt holds $(wc -c <"$shm/run.ckpt") bytes, one checkpoint $(wc -c <ref.ckpt)"
  [[ $(wc -l <"$shm/p.txt") == 15 ]] || bad "$shm/p.txt holds $(wc -l <"$shm/p.txt") lines, expected 15"
  "$predict" --params "$shm/run.ckpt" --data "$iris" >/dev/null 2>err.txt ||
    bad "gradsum-predict cannot load $shm/run.ckpt: $(head -c 300 err.txt)"
  ok "/dev/shm: a checkpoint resumed from and written over twice is one checkpoint, and loads"
else
  echo "note: /dev/shm is missing or may not be written: its cases are skipped"
fi
# /dev/.. is /: a regular file under it is replaced, not appended to.
printf 'old\n' >dotdot.txt
"$train" "${run[@]}" --save-params "/dev/..$real/dotdot.txt" >/dev/null || bad "the run into /dev/..$real failed"
cmp -s dotdot.txt ref.params || bad "--save-params /dev/..$real/dotdot.txt did not replace the file"
ok "/dev/..$real/dotdot.txt: replaced like any regular file"
# An open pipe named /proc/self/fd/3, /dev/fd/3 or /dev/stdout: written in
# place, the reader gets the bytes.
for out in /proc/self/fd/3 /dev/fd/3; do
  "$train" "${run[@]}" --save-params $out 3>&1 >/dev/null | cmp -s - ref.params ||
    bad "--save-params $out (a pipe): its reader got other bytes"
done
# (The program's own lines, in the buffer of its standard output, come last.)
"$train" "${run[@]}" --save-params /dev/stdout | grep -E '^-?[0-9]' | cmp -s - ref.params ||
  bad "--save-params /dev/stdout (a pipe): its reader got other bytes"
# A character device: a null device of the script's own, /dev/null left alone.
if mknod null c 1 3 2>/dev/null; then
  "$train" "${run[@]}" --save-params null --log null --checkpoint null >/dev/null ||
    bad "the run into a null device failed"
  [[ -c null && ! -s null ]] || bad "the null device was replaced"
  [[ "$(ls -A | grep -c '^\.null\.')" == 0 ]] || bad "temporary files left beside the null device"
  ok "a character device (a null device): written in place, still a device"
else
  echo "note: cannot make a device node (root only): the character device case is skipped"
fi
ok "/proc/self/fd/3, /dev/fd/3 and /dev/stdout, a pipe: written in place"

# --- '-' is standard output --------------------------------------------------
"$train" "${run[@]}" --save-params - >stdout.txt || bad "--save-params - failed"
tail -n 15 stdout.txt | cmp -s - ref.params || bad "--save-params - printed other values"
"$train" "${run[@]}" --log - >stdout.txt || bad "--log - failed"
[[ "$(grep -E '^(step,epoch,|[0-9]+,[0-9]+,)' stdout.txt | cut -d, -f1-5)" == "$(rows ref.log)" ]] ||
  bad "--log - printed other rows"
status=0
"$train" "${run[@]}" --checkpoint - >/dev/null 2>err.txt || status=$?
[[ $status == 2 ]] && grep -qF "'-' (standard output) cannot hold a checkpoint" err.txt ||
  bad "--checkpoint - : exit $status, $(head -c 300 err.txt)"
"$predict" --params ref.ckpt --data "$iris" >pred.stdout 2>/dev/null || bad "gradsum-predict failed"
"$predict" --params ref.ckpt --data "$iris" --output pred.txt 2>/dev/null || bad "--output failed"
[[ $(wc -l <pred.txt) == 150 ]] && cmp -s pred.txt pred.stdout || bad "--output wrote other lines than standard output"
"$predict" --params ref.ckpt --data "$iris" --output - 2>/dev/null | cmp -s - pred.stdout ||
  bad "--output - differs from the default"
ok "'-' for --save-params, --log and gradsum-predict --output; --checkpoint - refused (exit 2)"

# --- another user's link in a sticky folder is not followed ------------------
# The kernel's fs.protected_symlinks rule, whatever its setting: in a
# sticky, world-writable folder, a link is followed only if it belongs to
# the caller or to the folder's owner. Root only (it plants nobody's link).
if [[ $(id -u) == 0 ]]; then
  mkdir shared && chmod 1777 shared
  printf 'precious data\n' >outside.txt
  ln -s "$real/outside.txt" shared/p.txt && chown -h 65534:65534 shared/p.txt
  rule="the symbolic link '$real/shared/p.txt' belongs to uid 65534, neither you (uid 0) nor the owner of its sticky world-writable folder (uid 0), and such a link is not followed"
  expect 1 "--save-params: cannot write 'shared/p.txt': $rule" "--save-params through nobody's link in a sticky folder" -- \
    "$train" "${run[@]}" --save-params shared/p.txt
  grep -q '^epoch' out.txt && bad "--save-params through nobody's link: it trained before failing"
  expect 1 "gradsum::save_checkpoint: cannot write 'shared/p.txt': $rule" "--checkpoint through nobody's link" -- \
    "$train" "${run[@]}" --checkpoint shared/p.txt
  expect 1 "gradsum::CsvLog: cannot write 'shared/p.txt': $rule" "--log through nobody's link" -- \
    "$train" "${run[@]}" --log shared/p.txt
  expect 1 "--output: cannot write 'shared/p.txt': $rule" "gradsum-predict --output through nobody's link" -- \
    "$predict" --params ref.ckpt --data "$iris" --output shared/p.txt
  [[ "$(cat outside.txt)" == "precious data" ]] || bad "the file behind nobody's link was changed"
  [[ -L shared/p.txt && "$(ls -A shared)" == p.txt ]] || bad "the sticky folder changed: $(ls -A shared)"
  # The folder's owner's link is followed.
  chown 65534:65534 shared
  "$train" "${run[@]}" --save-params shared/p.txt >/dev/null || bad "the run through the folder owner's link failed"
  cmp -s outside.txt ref.params || bad "--save-params through the folder owner's link did not update its target"
  ok "a link in a sticky folder: nobody's refused, the folder owner's followed"
else
  echo "note: not root: the links of another user in a sticky folder are skipped"
fi

# --- failures: every existing file stays as it was ---------------------------
# A folder that may not be written. Root may write anything: the program
# then runs as the unprivileged user nobody (who may read the build).
mkdir locked
guard locked/p.txt locked/l.csv locked/c.ckpt
chmod 0755 "$work"
chmod 0555 locked
as_user=()
if [[ $(id -u) == 0 ]]; then
  if setpriv --reuid=65534 --regid=65534 --clear-groups "$train" --help >/dev/null 2>&1; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  else
    bad "running as root, and the user nobody cannot run $train: cannot test an unwritable folder"
  fi
fi
denied="creating a temporary file in '$real/locked': Permission denied"
expect 1 "--save-params: cannot write 'locked/new.txt': $denied" "--save-params into a read-only folder" -- \
  "${as_user[@]}" "$train" "${run[@]}" --save-params locked/new.txt
grep -q '^epoch' out.txt && bad "--save-params into a read-only folder: it trained before failing"
expect 1 "gradsum::save_checkpoint: cannot write 'locked/new.ckpt': $denied" \
  "--checkpoint into a read-only folder" -- "${as_user[@]}" "$train" "${run[@]}" --checkpoint locked/new.ckpt
expect 1 "gradsum::CsvLog: cannot write 'locked/new.csv': $denied" "--log into a read-only folder" -- \
  "${as_user[@]}" "$train" "${run[@]}" --log locked/new.csv
expect 1 "--output: cannot write 'locked/new.txt': $denied" "gradsum-predict --output into a read-only folder" -- \
  "${as_user[@]}" "$predict" --params ref.ckpt --data "$iris" --output locked/new.txt
chmod 0755 locked
unchanged locked/p.txt locked/l.csv locked/c.ckpt
[[ "$(ls -A locked | tr '\n' ' ')" == "c.ckpt l.csv p.txt " ]] || bad "files left in the locked folder: $(ls -A locked)"

# A folder that does not exist: found before training.
expect 1 "--save-params: cannot write 'nodir/p.txt': its folder 'nodir': No such file or directory" \
  "--save-params into a missing folder" -- "$train" "${run[@]}" --save-params nodir/p.txt
grep -q '^epoch' out.txt && bad "--save-params into a missing folder: it trained before failing"
expect 1 "gradsum::save_checkpoint: cannot write 'nodir/c.ckpt': its folder 'nodir': No such file or directory" \
  "--checkpoint into a missing folder" -- "$train" "${run[@]}" --checkpoint nodir/c.ckpt
grep -q '^epoch' out.txt && bad "--checkpoint into a missing folder: it trained before failing"

# --- out of room ---------------------------------------------------------------
# The digits (64 features, 10 classes) have 650 parameters: about 13 KB as
# text and, with Adam's two moments, 16 KB in a checkpoint; 6 epochs log 174
# updates (26 KB); their predictions are 20 KB. Each write fails with at most
# 8 KB of room.
big=(--data "$digits" --model softmax --optimizer adam --epochs 2 --batch 64 --progress off)
"$train" "${big[@]}" --save-params digits.params --checkpoint digits.ckpt >/dev/null ||
  bad "the digits run with room failed"
"$predict" --params digits.ckpt --data "$digits" >digits.pred 2>/dev/null || bad "predict on the digits failed"
for f in digits.params digits.ckpt digits.pred; do
  [[ $(wc -c <$f) -gt 8192 ]] || bad "$f fits in 8 KB: $(wc -c <$f) bytes"
done

# out_of_room DIR REASON [LAUNCHER…]: each program's output into DIR fails
# with the system's REASON; the files there stay as they were, and no
# temporary file is left.
out_of_room() {
  local dir="$1" reason="$2"
  shift 2
  local files=("$dir/params.txt" "$dir/run.ckpt" "$dir/run.log" "$dir/pred.out")
  guard "${files[@]}"
  expect 1 "--save-params: writing '$dir/params.txt' failed after" "--save-params: $reason" -- \
    "$@" "$train" "${big[@]}" --save-params "$dir/params.txt"
  grep -qF "$reason; the file is as it was" err.txt || bad "no reason given: $(cat err.txt)"
  expect 1 "gradsum::save_checkpoint: writing '$dir/run.ckpt' failed" "--checkpoint: $reason" -- \
    "$@" "$train" "${big[@]}" --checkpoint "$dir/run.ckpt"
  expect 1 "gradsum::CsvLog: writing '$dir/run.log' failed" "--log: $reason" -- \
    "$@" "$train" "${big[@]}" --epochs 6 --log "$dir/run.log"
  expect 1 "--output: writing '$dir/pred.out' failed" "gradsum-predict --output: $reason" -- \
    "$@" "$predict" --params digits.ckpt --data "$digits" --output "$dir/pred.out"
  unchanged "${files[@]}"
  local leftover
  leftover="$(ls -A "$dir" | grep -E '^\..*\.[0-9a-f]{16}\.tmp$' || true)"
  [[ -z "$leftover" ]] || bad "temporary files left in $dir: $leftover"
}

# A full disk: a tmpfs of 64 KiB, filled to 8 KiB of room. Root only (the
# script runs in a mount namespace of its own, so the mount goes with it).
mkdir full
if mount -t tmpfs -o size=64k tmpfs full 2>/dev/null; then
  guard full/params.txt full/run.ckpt full/run.log full/pred.out
  head -c 1M /dev/zero >full/filler 2>/dev/null
  truncate -s -8192 full/filler
  out_of_room full "No space left on device"
  if [[ -n "$mpiexec" ]]; then
    # 2 ranks: the write that fails on rank 0 fails every rank.
    export OMPI_MCA_orte_abort_on_non_zero_status=0
    guard full/params.txt
    rm -f status.*
    status=0
    timeout 120 "$mpiexec" "$np_flag" 2 "$here/rank_status.sh" "$train" "${big[@]}" \
      --save-params full/params.txt >out.txt 2>err.txt || status=$?
    ((status == 124)) && bad "2 ranks, --save-params on a full disk: hung"
    grep -qF -- "rank 0: --save-params: writing 'full/params.txt' failed after" err.txt ||
      bad "2 ranks: stderr lacks the write error: $(head -c 400 err.txt)"
    for r in 0 1; do
      [[ "$(cat "status.$r" 2>/dev/null)" == 1 ]] ||
        bad "2 ranks: rank $r exited with '$(cat "status.$r" 2>/dev/null)', expected 1"
    done
    unchanged full/params.txt
    ok "2 ranks, --save-params on a full disk: every rank exits 1"
  fi
else
  echo "note: cannot mount a tmpfs (root only): the full-disk cases are skipped"
fi

# A file-size limit (ulimit -f): the programs ignore SIGXFSZ, so the write
# fails with EFBIG. Without MPI only: MPI's start-up writes files that the
# limit would break.
if [[ -z "$mpiexec" ]]; then
  printf '#!/usr/bin/env bash\nulimit -f 8 && exec "$@"\n' >limited.sh
  chmod +x limited.sh
  mkdir limit
  out_of_room limit "File too large" ./limited.sh
fi

echo "outputs.sh: $checked checks, $failed failed"
((failed == 0))
