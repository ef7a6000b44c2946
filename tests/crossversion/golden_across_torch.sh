#!/usr/bin/env bash
# The cross-version lane: golden outputs frozen from an export made with one torch (the pinned
# .venv's) are verified against an export of the same model made with the other (the
# distribution's own /usr/bin/python3 torch), so a torch upgrade that changes numerics is caught.
# Exits 77 (CTest: skipped) with a message where the distribution packages no PyTorch.
#   golden_across_torch.sh ONNXPROOF_BINARY PINNED_PYTHON MODELS_FILE
set -euo pipefail
onnxproof="$1" pinned="$2" models="$3"
distribution=/usr/bin/python3
if ! "$distribution" -c 'import torch, onnx, numpy' 2>/dev/null; then
  echo "cross-version lane skipped: $distribution has no torch/onnx/numpy (this distribution packages no PyTorch)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {  # run PYTHON OUT: the pipeline at opset 17 (the newest the distribution's torch 1.13 writes)
  "$onnxproof" pipeline --model "$models:dict_output" --input x=2x8:float32 --dynamic x:0=batch \
    --samples 2 --opset 17 --exporter torchscript --python "$1" --out "$2"
}
versions() { "$1" -c 'import torch; print(torch.__version__)'; }
echo "freezing with torch $(versions "$pinned") ($pinned)"
run "$pinned" "$work/pinned" >"$work/pinned.log" 2>&1 || { cat "$work/pinned.log"; exit 1; }
cp -r "$work/pinned/golden" "$work/distribution-golden"
mkdir -p "$work/distribution" && cp -r "$work/distribution-golden" "$work/distribution/golden"
echo "verifying an export made with torch $(versions "$distribution") ($distribution) against that golden set"
if ! run "$distribution" "$work/distribution" >"$work/distribution.log" 2>&1; then
  cat "$work/distribution.log"
  echo "cross-version lane: FAILED (the export with the distribution's torch does not verify against the golden set)"
  exit 1
fi
grep -q '"verdict": "pass"' "$work/distribution/report.json"
grep -q 'verified the new export against the golden set' "$work/distribution/report.md" ||
  { echo "cross-version lane: the golden step did not verify (see report.md)"; cat "$work/distribution/report.md"; exit 1; }
echo "cross-version lane: torch $(versions "$distribution") export verified against golden outputs of torch $(versions "$pinned")"
