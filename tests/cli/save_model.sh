#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum-train --save-model, --save-params FILE.safetensors and
# --init-params, and gradsum-predict on a model file:
# - gradsum-predict prints the same lines and summary from the model file
#   as from the checkpoint of the same run (softmax with its scaling, an
#   MLP, least squares, class names);
# - --save-params FILE.safetensors writes the bytes --save-model writes;
# - --init-params from the model file, or from --save-params' text, starts
#   --print-gradient where --resume from the checkpoint does, and a run of
#   0 epochs from it saves the same parameters again;
# - files that do not fit are refused, naming the flag and the tensor;
# - with MPIEXEC, 2 ranks (--reduce reproducible) write the bytes 1 rank
#   writes: the file depends on neither the rank count nor the optimizer's
#   state.
# usage: save_model.sh GRADSUM_TRAIN GRADSUM_PREDICT DATA_FOLDER [MPIEXEC NUMPROC_FLAG]
set -euo pipefail
train="$1" predict="$2" data="$3" mpiexec="${4:-}" np_flag="${5:-}"
source "$(dirname "$0")/common.sh"
plain_entries
in_work_dir save_model
iris="$data/iris.csv"

# same_prediction NAME TRAIN_FLAGS…: trains with a checkpoint and a model
# file, and compares gradsum-predict's output from each.
same_prediction() {
  local name="$1" file="$2"
  shift 2
  "$train" --data "$file" --progress off --checkpoint "$name.ckpt" \
    --save-model "$name.safetensors" "$@" >/dev/null
  "$predict" --params "$name.ckpt" --data "$file" >"$name.ckpt.out" 2>"$name.ckpt.err"
  "$predict" --params "$name.safetensors" --data "$file" >"$name.st.out" 2>"$name.st.err"
  if cmp -s "$name.ckpt.out" "$name.st.out" && cmp -s "$name.ckpt.err" "$name.st.err"; then
    passed "$name: gradsum-predict prints the same from the model file: $(cat "$name.st.err")"
  else
    bad "$name: the model file predicts otherwise: $(head -c 300 "$name.st.err")"
  fi
}
same_prediction softmax "$iris" --model softmax --standardize --optimizer lbfgs --epochs 20
same_prediction mlp "$iris" --model mlp:8 --activation tanh --standardize --optimizer adam \
  --lr 0.05 --batch 16 --epochs 5
same_prediction linear "$data/breast_cancer.csv" --model linear --standardize \
  --optimizer newton --epochs 2
# Class names: the model file keeps them, gradsum-predict prints them.
awk -F, 'BEGIN { OFS = ","; split("setosa versicolor virginica", name, " ") }
  NR == 1 { print; next } { $NF = name[$NF + 1]; print }' "$iris" >names.csv
same_prediction names names.csv --model softmax --optimizer lbfgs --epochs 10
grep -q "^versicolor " names.st.out || bad "names: no class printed by name: $(head -2 names.st.out)"

"$train" --data "$iris" --model mlp:8 --activation tanh --standardize --epochs 2 --progress off \
  --seed 3 --save-params params.safetensors --save-model model.safetensors \
  --checkpoint run.ckpt >/dev/null
"$train" --data "$iris" --model mlp:8 --activation tanh --standardize --epochs 2 --progress off \
  --seed 3 --save-params params.txt >/dev/null
if cmp -s params.safetensors model.safetensors; then
  passed "--save-params FILE.safetensors writes what --save-model writes"
else
  bad "--save-params FILE.safetensors and --save-model differ"
fi

mlp=(--data "$iris" --model mlp:8 --activation tanh --standardize --progress off)
"$train" "${mlp[@]}" --print-gradient --resume run.ckpt >resumed.txt
for start in model.safetensors params.txt; do
  "$train" "${mlp[@]}" --print-gradient --init-params "$start" >started.txt
  if cmp -s resumed.txt started.txt; then
    passed "--init-params $start starts --print-gradient where --resume does"
  else
    bad "--init-params $start: another gradient than --resume's"
  fi
done
"$train" "${mlp[@]}" --epochs 0 --init-params model.safetensors --save-params again.txt >/dev/null
if cmp -s params.txt again.txt; then
  passed "0 epochs from --init-params save the same parameters"
else
  bad "--init-params then --save-params changed the parameters"
fi

expect 1 "--init-params: gradsum::load_model: 'model.safetensors' holds model 'mlp:4-8(tanh)-3', expected 'mlp:4-9(tanh)-3'" \
  "--init-params of another network" -- \
  "$train" --data "$iris" --model mlp:9 --activation tanh --progress off --print-gradient \
  --init-params model.safetensors
sed '3s/.*/x/' params.txt >word.txt
expect 1 "--init-params: word.txt:3: 'x' is not a finite number" "--init-params with a word" -- \
  "$train" "${mlp[@]}" --print-gradient --init-params word.txt
head -n 5 params.txt >short.txt
expect 1 "--init-params: short.txt: holds 5 values, the model has 67 parameters" \
  "--init-params with too few values" -- \
  "$train" "${mlp[@]}" --print-gradient --init-params short.txt
expect 2 "--init-params: does not combine with --resume" "--init-params with --resume" -- \
  "$train" "${mlp[@]}" --init-params params.txt --resume run.ckpt
expect 2 "--save-model: '-' (standard output) cannot hold a binary model file" \
  "--save-model -" -- "$train" "${mlp[@]}" --save-model -
# A model file whose tensor was renamed: gradsum-predict names it.
sed 's/layers\.1\.bias/layers.1.bogs/' model.safetensors >renamed.safetensors
expect 1 "'renamed.safetensors': tensor 'layers.1.bias' (shape [3]) is missing" \
  "gradsum-predict with a tensor renamed" -- \
  "$predict" --params renamed.safetensors --data "$iris"
if [[ -n "$mpiexec" ]]; then
  same=(--data "$iris" --model mlp:8 --activation tanh --standardize --optimizer adam
        --batch 32 --epochs 2 --reduce reproducible --progress off)
  "$train" "${same[@]}" --save-model one.safetensors >/dev/null
  "$mpiexec" "$np_flag" 2 "$train" "${same[@]}" --save-model two.safetensors >/dev/null
  if cmp -s one.safetensors two.safetensors; then
    passed "2 ranks write the model file 1 rank writes"
  else
    bad "the model files of 1 and 2 ranks differ"
  fi
fi
echo "save_model.sh: $failed failed"
((failed == 0))
