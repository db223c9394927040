#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A page quotes a source file whole: the fenced block between
# <!-- NAME begin --> and <!-- NAME end --> in DOC must be FILE.
# usage: doc_quotes_file.sh DOC NAME FILE
set -euo pipefail
doc="$1" name="$2" file="$3"
quoted="$(awk -v b="<!-- $name begin -->" -v e="<!-- $name end -->" \
  '$0 == b {f=1; next} $0 == e {f=0} f' "$doc" | sed '1d;$d')"
[ -n "$quoted" ] || { echo "FAILED: no block '$name' in $doc"; exit 1; }
diff <(echo "$quoted") "$file" || { echo "FAILED: the block '$name' in $doc differs from $file"; exit 1; }
echo "$doc quotes $file"
