#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gradsum's safetensors files and Python's (safetensors_python.py):
#   read:  the files gradsum-train --save-model writes for softmax, logistic
#          and MLP models, read with numpy.frombuffer, hold the parameters
#          --save-params prints;
#   numpy, torch: a file Python writes in PyTorch's layout (torch: from an
#          nn.Module's state_dict; exit 77 without torch) is applied by
#          gradsum-predict as Python computes it, and loaded without
#          metadata by --init-params, saved again and applied, identically;
#          torch: that file gradsum saved loads into the nn.Module with
#          load_state_dict(strict=True) and predicts the same.
#   gpt:   (exit 77 without torch) the reference PyTorch GPT's initial
#          tensors, loaded by --init-params, give PyTorch's loss and
#          gradient over the training windows (--print-gradient, double);
#          trained three steps and saved by gradsum, they load into the
#          module with load_state_dict(strict=True) and give gradsum's.
# usage: safetensors_python.sh read|numpy|torch PYTHON GRADSUM_TRAIN GRADSUM_PREDICT DATA_FOLDER
#        safetensors_python.sh gpt PYTHON GRADSUM_TRAIN GRADSUM_PREDICT TEXT
set -euo pipefail
mode="$1" python="$2" train="$3" predict="$4" data="$5"
script="$(cd "$(dirname "$0")" && pwd)/safetensors_python.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

if [[ "$mode" == read ]]; then
  for model in "softmax --data $data/iris.csv" "logistic --data $data/breast_cancer.csv" \
               "mlp:6,5 --activation tanh --data $data/iris.csv"; do
    # shellcheck disable=SC2086
    "$train" --model $model --standardize --epochs 3 --progress off --save-model m.safetensors \
      --save-params p.txt >/dev/null
    "$python" "$script" read m.safetensors p.txt
  done
  exit 0
fi

if [[ "$mode" == gpt ]]; then
  text="$data" shape=43,16,2,2,16
  gpt=(--text "$text" --model gpt:layers=2,heads=2,width=16,context=16 --precision double
       --validation 0.1)
  "$python" "$script" gpt "$text" . "$shape"
  "$train" "${gpt[@]}" --init-params init.safetensors --print-gradient >gradsum_gradient.txt
  "$python" "$script" gptcompare gradsum_gradient.txt torch_gradient.txt
  "$train" "${gpt[@]}" --init-params init.safetensors --optimizer adamw --lr 0.01 --batch 8 \
    --max-steps 3 --save-model trained.safetensors >/dev/null
  "$train" "${gpt[@]}" --init-params trained.safetensors --print-gradient >trained_gradsum.txt
  "$python" "$script" gptload trained.safetensors "$text" trained_torch.txt "$shape"
  "$python" "$script" gptcompare trained_gradsum.txt trained_torch.txt
  exit 0
fi

"$python" "$script" write "$mode" .
"$predict" --params model.safetensors --data rows.csv >predicted.txt 2>/dev/null
"$python" "$script" compare predicted.txt expected.txt
# The same tensors without gradsum's metadata, loaded into the model the
# flags describe, saved by gradsum and applied: the very same output.
"$train" --data rows.csv --model mlp:8 --activation tanh --loss squared --epochs 0 \
  --progress off --init-params bare.safetensors --save-model again.safetensors >/dev/null
"$predict" --params again.safetensors --data rows.csv >again.txt 2>/dev/null
cmp predicted.txt again.txt || { echo "FAILED: gradsum's own copy predicts otherwise"; exit 1; }
if [[ "$mode" == torch ]]; then
  # The file gradsum wrote loads into the nn.Module (strict names and shapes).
  "$python" "$script" torchload again.safetensors rows.csv torch.txt
  "$python" "$script" compare torch.txt again.txt
fi
echo "gradsum applies the file Python wrote ($mode) as Python does"
