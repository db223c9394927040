# SPDX-License-Identifier: Apache-2.0
# Shared by the command-line tests; source it. The test defines bad MESSAGE
# (record a failure), begin_entry (before each expect) and passed TEXT, or
# takes them from plain_entries or numbered_entries below.

# expect STATUS MESSAGE DESCRIPTION -- COMMAND…: runs COMMAND (60 s at most)
# and checks its exit status and that its stderr contains MESSAGE; never a
# signal (status >= 128) or a hang.
expect() {
  local want="$1" message="$2" what="$3" status=0
  shift 4
  begin_entry
  timeout 60 "$@" >out.txt 2>err.txt || status=$?
  if ((status == 124)); then bad "$what: hung (killed after 60 s)"; return; fi
  if ((status >= 128)); then bad "$what: killed by signal $((status - 128))"; return; fi
  [[ "$status" == "$want" ]] || bad "$what: exit status $status, expected $want"
  grep -qF -- "$message" err.txt || bad "$what: stderr lacks '$message': $(head -c 400 err.txt)"
  passed "exit $status: $what"
}

# guard FILE…: gives each file known contents; unchanged FILE… checks them.
guard() { for f in "$@"; do printf 'existing %s\n' "$f" >"$f"; done; }
unchanged() {
  for f in "$@"; do
    [[ "$(cat "$f" 2>/dev/null)" == "existing $f" ]] || bad "the failed run changed '$f'"
  done
}

# in_work_dir NAME: a new folder (named after NAME, under $TMPDIR), removed
# when the test exits, becomes the working directory; $work names it.
in_work_dir() {
  work="$(mktemp -d "${TMPDIR:-/tmp}/gradsum_$1.XXXXXX")" || exit 1
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
}

# Two ways to define bad, begin_entry and passed, counting failures in
# $failed: plain_entries prints them as they come; numbered_entries FIRST
# numbers them from FIRST + 1 ($number, $checked), as the catalogue does.
plain_entries() {
  failed=0
  bad() { echo "FAILED: $*"; failed=$((failed + 1)); }
  begin_entry() { :; }
  passed() { echo "$*"; }
}
numbered_entries() {
  number="$1" checked=0 failed=0
  bad() { echo "FAILED #$number: $*"; failed=$((failed + 1)); }
  begin_entry() { number=$((number + 1)) checked=$((checked + 1)); }
  passed() { echo "#$number $*"; }
}
