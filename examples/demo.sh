#!/usr/bin/env bash
# The built-in example end to end, with what onnxproof can do today: export the digits CNN with
# PyTorch on real held-out images, check the ONNX file, run it with ONNX Runtime on the 450
# held-out images, and compare the predictions with PyTorch's. (The one-command `onnxproof demo`
# replaces this script once the pipeline lands.)
set -euo pipefail

build="${1:-build}"
out="${2:-onnxproof-out/digits}"
onnxproof="$build/bin/onnxproof"
python="${ONNXPROOF_PYTHON:-/usr/bin/python3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
example="$root/examples/digits/digits_cnn.py"

echo "== onnxproof export (trains the example on first use: a few seconds)"
"$onnxproof" export --model "$example:build" --input image=1x1x8x8:float32 --dynamic image:0=batch \
  --data "$example:held_out_batches" --out "$out"

echo
echo "== onnxproof check"
"$onnxproof" check "$out/model.onnx" --json "$out/check.json"

echo
echo "== onnxproof run (ONNX Runtime, CPU) on the 450 held-out digits"
"$onnxproof" run "$out/model.onnx" --input "image=$out/reference/test_data_set_0/input_0.pb" \
  --output-dir "$out/onnxruntime" --format npy

echo
echo "== ONNX Runtime against PyTorch on the held-out digits"
PYTHONPATH="$root/examples/digits" "$python" - "$out" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
from digits_cnn import held_out_labels

out = sys.argv[1]
labels = held_out_labels()
torch_logits = numpy_helper.to_array(onnx.load_tensor(f"{out}/reference/test_data_set_0/output_0.pb"))
ort_logits = np.load(f"{out}/onnxruntime/output_0.npy")
flips = int((torch_logits.argmax(1) != ort_logits.argmax(1)).sum())
print(f"accuracy  PyTorch {np.mean(torch_logits.argmax(1) == labels):.1%}   "
      f"ONNX Runtime {np.mean(ort_logits.argmax(1) == labels):.1%}   flipped predictions {flips}")
print(f"max |ONNX Runtime - PyTorch| = {np.abs(ort_logits - torch_logits).max():.3g} over {ort_logits.size} logits")
PY
echo
echo "results in $out (export.json, reference/, check.json, onnxruntime/)"
