#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --suspects: labels flipped here on purpose (the flipped rows
# are the independent fact) come out on top - breast cancer with logistic
# regression (at least 80% of the flipped rows among the top K, K the number
# flipped), the digits with an MLP that fits every label (at least 75%);
# the rows are the file's data rows after held-out splits, targets are
# class names where the file has them; --suspects-out writes the same rows;
# under mpiexec 2 and 3 ranks print the same suspects as one; bad counts are
# refused with messages naming them.
# usage: suspects.sh TRAIN DATA_FOLDER [MPIEXEC NUMPROC_FLAG]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" data="$2" mpiexec="${3:-}" np_flag="${4:-}"
in_work_dir suspects
plain_entries

# flip IN OUT COUNT CLASSES SEED: changes the target of COUNT distinct data
# rows (drawn by a 64-bit LCG) to another of the CLASSES 0 … CLASSES-1, and
# writes their 1-based data rows to OUT.rows. IN has a header row.
flip() {
  local in="$1" out="$2" count="$3" classes="$4" state="$5" rows n
  n=$(($(wc -l <"$in") - 1))
  declare -A picked=()
  while ((${#picked[@]} < count)); do
    state=$(((state * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff))
    picked[$(((state >> 17) % n + 1))]=$(((state >> 40) % (classes - 1) + 1))
  done
  : >"$out.rows"
  for r in "${!picked[@]}"; do echo "$r ${picked[$r]}"; done | sort -n >"$out.rows"
  awk -v classes="$classes" 'NR == FNR { shift[$1] = $2; next }
    FNR == 1 { print; next }
    { r = FNR - 1; if (r in shift) { $NF = ($NF + shift[r]) % classes }; print }' \
    FS=' ' "$out.rows" FS=',' OFS=',' "$in" >"$out"
  cut -d' ' -f1 "$out.rows" >"$out.rows.tmp" && mv "$out.rows.tmp" "$out.rows"
}

# recovered OUTPUT ROWS: how many of ROWS the suspect lines of OUTPUT name.
recovered() {
  sed -n 's/^suspect row=\([0-9]*\) .*/\1/p' "$1" | sort | comm -12 - <(sort "$2") | wc -l
}

cancer="$data/breast_cancer.csv"
flip "$cancer" cancer.csv 28 2 27
[[ "$(wc -l <cancer.csv.rows)" == 28 ]] || bad "flip: $(wc -l <cancer.csv.rows) rows flipped, expected 28"
[[ "$(diff <(tail -n +2 "$cancer") <(tail -n +2 cancer.csv) | grep -c '^>')" == 28 ]] ||
  bad "flip: cancer.csv differs from the file in other than 28 rows"
args=(--data cancer.csv --standardize --model logistic --epochs 100 --progress off)
"$train" "${args[@]}" --suspects 28 --suspects-out cancer_suspects.csv >one.txt 2>&1 ||
  bad "breast cancer --suspects 28: $(tail -3 one.txt)"
[[ "$(grep -c '^suspect row=' one.txt)" == 28 ]] || bad "breast cancer: $(grep -c '^suspect' one.txt) suspect lines, expected 28"
hit=$(recovered one.txt cancer.csv.rows)
((hit * 100 >= 80 * 28)) || bad "breast cancer: $hit of 28 flipped rows among the suspects, expected >= 23"
passed "breast cancer, logistic: $hit of 28 flipped rows among the top 28 suspects"
# Most suspicious first.
sed -n 's/^suspect .* score=//p' one.txt | sort -g -r -c 2>/dev/null || bad "breast cancer: scores not decreasing"
# The CSV: a header, then the printed rows in the printed order.
[[ "$(head -n 1 cancer_suspects.csv)" == "row,target,predicted,score" ]] ||
  bad "--suspects-out header: $(head -n 1 cancer_suspects.csv)"
[[ "$(tail -n +2 cancer_suspects.csv | cut -d, -f1-3)" == \
   "$(sed -n 's/^suspect row=\([0-9]*\) target=\([^ ]*\) predicted=\([^ ]*\) .*/\1,\2,\3/p' one.txt)" ]] ||
  bad "--suspects-out rows differ from the printed ones"
passed "--suspects-out writes the printed rows"

# Held-out splits and class names: every suspect's row and target are
# those of the file (header not counted).
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } { $NF = $NF == 0 ? "malignant" : "benign"; print }' \
  cancer.csv >names.csv
"$train" --data names.csv --standardize --model logistic --epochs 60 --progress off \
  --test-fraction 0.2 --validation 0.1 --suspects 40 >split.txt 2>&1 || bad "split run: $(tail -3 split.txt)"
[[ "$(grep -c '^suspect row=' split.txt)" == 40 ]] || bad "split run: $(grep -c '^suspect' split.txt) suspect lines"
while read -r row target; do
  given="$(sed -n "$((row + 1))p" names.csv | awk -F, '{ print $NF }')"
  [[ "$given" == "$target" ]] || bad "split run: row $row has target '$given' in the file, printed '$target'"
done < <(sed -n 's/^suspect row=\([0-9]*\) target=\([^ ]*\) .*/\1 \2/p' split.txt)
grep -q '^suspect row=[0-9]* target=\(malignant\|benign\) predicted=\(malignant\|benign\) score=' split.txt ||
  bad "split run: targets not printed as class names: $(grep -m1 '^suspect' split.txt)"
hit=$(recovered split.txt cancer.csv.rows)
passed "rows and class names match the file after --test-fraction and --validation ($hit flipped rows among 40)"

# The digits with an MLP that reaches (almost) every training label.
gzip -dc "$data/digits.csv.gz" | sed '1i digits' >digits_in.csv
flip digits_in.csv digits.csv 90 10 5
"$train" --data digits.csv --standardize --model mlp:64 --activation tanh --optimizer adam \
  --lr 0.01 --batch 32 --epochs 40 --progress off --suspects 90 >digits.txt 2>&1 ||
  bad "digits --suspects 90: $(tail -3 digits.txt)"
hit=$(recovered digits.txt digits.csv.rows)
((hit * 100 >= 75 * 90)) || bad "digits: $hit of 90 changed rows among the suspects, expected >= 68"
passed "digits, MLP ($(grep -o 'accuracy=[0-9.]*' digits.txt | head -1) on training): $hit of 90 changed rows among the top 90"

# Bad counts.
expect 2 "--suspects: expected the number of rows to report, at least 1, got 0" "--suspects 0" -- \
  "$train" --data cancer.csv --suspects 0
expect 2 "--suspects: expected an integer in [0, " "--suspects -3" -- "$train" --data cancer.csv --suspects -3
expect 2 "--suspects: expected an integer in [0, " "--suspects ten" -- "$train" --data cancer.csv --suspects ten
expect 2 "--suspects-out: needs --suspects K" "--suspects-out alone" -- \
  "$train" --data cancer.csv --suspects-out s.csv
expect 2 "--suspects-out: empty file name" "--suspects-out ''" -- \
  "$train" --data cancer.csv --suspects 3 --suspects-out ''
expect 2 "--suspects: ranks rows after training, but --print-gradient does not train" \
  "--suspects with --print-gradient" -- "$train" --data cancer.csv --suspects 3 --print-gradient
expect 1 "--suspects: asks for 570 rows, but training holds 569; ask for at most 569" \
  "more suspects than rows" -- "$train" --data cancer.csv --suspects 570 --progress off
expect 1 "--suspects: asks for 569 rows, but training holds 455; ask for at most 455" \
  "more suspects than the rows left after --test-fraction" -- \
  "$train" --data cancer.csv --suspects 569 --test-fraction 0.2 --progress off
expect 1 "--suspects-out: " "--suspects-out in a folder that does not exist" -- \
  "$train" --data cancer.csv --suspects 3 --suspects-out no/such/folder.csv --progress off
[[ -n "$(grep -F 'suspect row=' out.txt)" ]] && bad "a refused --suspects-out still trained and printed suspects"

if [[ -n "$mpiexec" ]]; then
  # The same suspects on 1, 2 and 3 ranks: reproducible sums give every
  # rank count the same parameters, so the merged top K is the same.
  repro=(--data cancer.csv --standardize --model logistic --epochs 50 --progress off --reduce reproducible
         --suspects 28)
  "$train" "${repro[@]}" 2>&1 | grep '^suspect' >ranks1.txt
  for ranks in 2 3; do
    "$mpiexec" "$np_flag" "$ranks" "$train" "${repro[@]}" 2>&1 | grep '^suspect' >"ranks$ranks.txt"
    [[ -s ranks1.txt ]] && cmp -s ranks1.txt "ranks$ranks.txt" ||
      bad "$ranks ranks print other suspects than one: $(diff ranks1.txt "ranks$ranks.txt" | head -4)"
  done
  passed "the same $(wc -l <ranks1.txt) suspects on 1, 2 and 3 ranks"
  expect 1 "--suspects: asks for 570 rows, but training holds 569" "more suspects than rows on 2 ranks" -- \
    "$mpiexec" "$np_flag" 2 "$train" --data cancer.csv --suspects 570 --progress off
  (($(grep -c 'asks for 570' err.txt) == 1)) || bad "2 ranks: the refusal printed $(grep -c 'asks for 570' err.txt) times"
fi

((failed == 0)) || { echo "$failed check(s) failed"; exit 1; }
echo "all suspects checks passed"
