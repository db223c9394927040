#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A GPT's files: a run stopped at a checkpoint and resumed ends with the
# uninterrupted run's parameters, byte for byte; the parameters saved as
# text, as safetensors and in a checkpoint give the same gradient when
# training starts from them (--init-params, --resume, --print-gradient);
# gradsum-predict --generate writes the same text from the checkpoint and
# from the model file for a seed, and other text for another seed; files
# and prompts that do not fit are clear errors.
# usage: gpt_files.sh TRAIN PREDICT TEXT
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"
train="$1" predict="$2" text="$3"
in_work_dir gpt_files
plain_entries

model=gpt:layers=1,heads=2,width=16,context=16
base=(--text "$text" --model "$model" --optimizer adamw --lr 0.01 --batch 8 --validation 0.1
      --schedule cosine:12 --warmup 3 --clip-norm 1)
args=("${base[@]}" --seed 4)

# 12 steps at once, and 5 + 7 through a checkpoint.
"$train" "${args[@]}" --max-steps 12 --save-params straight.txt >/dev/null || bad "12 steps failed"
"$train" "${args[@]}" --max-steps 5 --checkpoint five.ckpt --save-params five.txt \
  --save-model five.safetensors >/dev/null || bad "5 steps failed"
"$train" "${args[@]}" --max-steps 12 --resume five.ckpt --save-params resumed.txt \
  >resumed.out || bad "the resumed run failed"
grep -q "resumed from 'five.ckpt' after step 5" resumed.out || bad "no resume line: $(cat resumed.out)"
if cmp -s straight.txt resumed.txt && [[ -s straight.txt ]]; then
  echo "5 steps, checkpoint, 7 more: the 12 steps' $(wc -l <straight.txt) parameters, byte for byte"
else
  bad "the resumed run's parameters differ from the uninterrupted run's"
fi

# The same parameters three ways give the same objective and gradient.
"$train" "${args[@]}" --print-gradient --init-params five.txt >g_text.txt || bad "text init failed"
"$train" "${args[@]}" --print-gradient --init-params five.safetensors >g_st.txt ||
  bad "safetensors init failed"
"$train" "${args[@]}" --print-gradient --resume five.ckpt | grep -v '^resumed' >g_ckpt.txt ||
  bad "checkpoint gradient failed"
parameters=$(wc -l <five.txt)
if [[ $(wc -l <g_text.txt) == $((parameters + 1)) ]] && cmp -s g_text.txt g_st.txt &&
   cmp -s g_text.txt g_ckpt.txt; then
  echo "--print-gradient: $parameters values and the objective, the same from text, safetensors and checkpoint"
else
  bad "--print-gradient differs between the three files (or has not $parameters + 1 lines)"
fi

# Sampling: the same seed, the same text, from either file.
"$predict" --params five.ckpt --generate 60 --prompt "And God" --seed 9 >a.txt || bad "generate failed"
"$predict" --params five.safetensors --generate 60 --prompt "And God" --seed 9 >b.txt ||
  bad "generate from the model file failed"
"$predict" --params five.ckpt --generate 60 --prompt "And God" --seed 10 >c.txt || bad "seed 10 failed"
"$predict" --params five.ckpt --generate 60 --prompt "And God" --temperature 0 >d.txt ||
  bad "temperature 0 failed"
"$predict" --params five.ckpt --generate 60 --prompt "And God" --temperature 0 --seed 3 >e.txt ||
  bad "temperature 0, seed 3 failed"
if [[ $(head -c 7 a.txt) == "And God" && $(wc -c <a.txt) == 67 ]] && cmp -s a.txt b.txt &&
   ! cmp -s a.txt c.txt && cmp -s d.txt e.txt; then
  echo "--generate 60: $(wc -c <a.txt) bytes, the same for a seed from the checkpoint and the model file"
else
  bad "--generate: wrong length or prompt, or seeds that do not decide the text"
fi

tr 'e' '~' <"$text" >other.txt  # as many characters, one of them another
expect 1 "was written for a vocabulary of 43 characters, not the 43 of 'other.txt'" \
  "resume on another text" -- \
  "${train}" "${args[@]/$text/other.txt}" --max-steps 13 --resume five.ckpt
expect 1 "was written with --seed 4" "resume with another seed" -- \
  "$train" "${base[@]}" --seed 5 --max-steps 3 --resume five.ckpt
expect 1 "is not in the vocabulary" "a prompt byte the text lacks" -- \
  "$predict" --params five.ckpt --generate 5 --prompt "A~"
expect 2 "--generate: writes text from a prompt and does not read --data" "--generate with --data" -- \
  "$predict" --params five.ckpt --generate 5 --data "$text"
expect 2 "--temperature: applies to --generate N" "--temperature without --generate" -- \
  "$predict" --params five.ckpt --data "$text" --temperature 2
printf '1,2\n3,4\n' >rows.csv
"$train" --data rows.csv --model linear --epochs 1 --checkpoint linear.ckpt >/dev/null 2>&1
expect 1 "not a GPT trained on text" "--generate with a linear model" -- \
  "$predict" --params linear.ckpt --generate 5
expect 1 "holds model 'gpt:vocabulary=" "--init-params of another width" -- \
  "$train" --text "$text" --model gpt:layers=1,heads=2,width=8,context=16 --print-gradient \
  --init-params five.safetensors
((failed == 0)) || { echo "$failed failed"; exit 1; }
echo "all passed"
