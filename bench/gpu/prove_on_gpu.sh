#!/usr/bin/env bash
# The GPU proof of issue 29, for a session lent a GPU machine (the device tool). NOT RUN YET.
# Proves resnet18, a small BERT and the planted float16 overflow (bench/gpu/overflow_model.py)
# with `pipeline --provider cpu,cuda` in fp32 and fp16, and with tensorrt when its libraries load;
# writes $OUT/figures.md (one row per run: verdict, seconds, finding codes, the first node named)
# and $OUT/reports.tar.gz (every report.json and report.md). 8 runs of at most RUN_LIMIT (55) s:
# under 8 minutes on an H200 whatever happens.
#
# What the GPU machine needs (it reaches no registry; docs/providers.md):
#   ENGINE                 the onnxproof binary and the shared libraries it needs beside the system's
#                          (default: build/bin/onnxproof)
#   ONNXPROOF_ONNXRUNTIME  the GPU build of ONNX Runtime: `make setup-gpu`'s .deps/onnxruntime-gpu
#                          (libonnxruntime.so.1, libonnxruntime_providers_{shared,cuda,tensorrt}.so),
#                          its library-path rewritten for that machine's CUDA 13 and cuDNN 9 folders
#   PYTHON                 an interpreter with torch, onnx, onnxruntime, transformers, torchvision
#                          (default: python3, which holds PyTorch there)
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
ENGINE="${ENGINE:-$root/build/bin/onnxproof}"
PYTHON="${PYTHON:-python3}"
RUN_LIMIT="${RUN_LIMIT:-55}"
OUT="${OUT:-$root/gpu-out}"
export ONNXPROOF_ONNXRUNTIME="${ONNXPROOF_ONNXRUNTIME:-$root/.deps/onnxruntime-gpu}"
export PYTHONUNBUFFERED=1
# An empty library-path (bench/gpu/pack_for_device.sh's): the folders of this machine's Python that
# hold CUDA 13 and cuDNN 9 (torch's nvidia-* wheels).
if [[ -f "$ONNXPROOF_ONNXRUNTIME/library-path" && ! -s "$ONNXPROOF_ONNXRUNTIME/library-path" ]]; then
  site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  find "$site/nvidia" -name 'libcublasLt.so.13' -o -name 'libcudnn.so.9' -o -name 'libcudart.so.13' 2>/dev/null |
    xargs -r -n1 dirname | sort -u >"$ONNXPROOF_ONNXRUNTIME/library-path"
fi
work="$(mktemp -d)"
mkdir -p "$OUT"
figures="$OUT/figures.md"

{
  echo "# GPU proof (bench/gpu/prove_on_gpu.sh), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
  echo "onnxproof: $("$ENGINE" --version 2>&1 | tr '\n' ' ' | cut -c1-300)"
  echo
  echo "| model | providers | precision | verdict | exit | seconds | findings | first node / fallback |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$figures"

summarize() {  # report.json -> "verdict|codes|first node or fallback"
  "$PYTHON" - "$1" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except OSError:
    print("none||"); sys.exit()
codes = sorted({f["code"] for f in report.get("findings", [])})
named = [f["message"].split("; first node")[1][:80] for f in report.get("findings", []) if "; first node" in f["message"]]
fallback = [f["message"][:100] for f in report.get("findings", []) if f["code"] == "PROVIDER_FALLBACK"]
print(f'{report.get("verdict")}|{" ".join(codes)}|{(named + fallback + [""])[0].replace("|", "/")}')
PY
}

prove() {  # NAME PROVIDERS PRECISION SPEC ARGS...
  local name="$1" providers="$2" precision="$3" spec="$4"
  shift 4
  local out="$work/$name-${providers//,/-}-$precision"
  local start end code
  start="$(date +%s.%N)"
  timeout "$RUN_LIMIT" "$ENGINE" pipeline --model "$spec" "$@" --provider "$providers" --precision "$precision" \
    --python "$PYTHON" --no-golden --out "$out" >"$out.log" 2>&1
  code=$?
  end="$(date +%s.%N)"
  IFS='|' read -r verdict codes first <<<"$(summarize "$out/report.json")"
  printf '| %s | %s | %s | %s | %s | %.1f | %s | %s |\n' "$name" "$providers" "$precision" "$verdict" "$code" \
    "$(echo "$end - $start" | bc)" "$codes" "$first" >>"$figures"
}

# PROVIDERS and MODELS narrow the run (a dry run on a CPU machine: PROVIDERS=cpu MODELS=overflow).
PROVIDERS="${PROVIDERS:-cpu,cuda}"
MODELS="${MODELS:-resnet18 bert overflow}"
prove_model() {  # NAME PROVIDERS PRECISION
  case "$1" in
    resnet18) prove resnet18 "$2" "$3" torchvision:resnet18 --sweep batch=1,2 ;;
    bert) prove bert "$2" "$3" hf:BertModel:num_hidden_layers=2 --sweep batch=1,2 --sweep sequence=8 ;;
    overflow) prove overflow "$2" "$3" "$root/bench/gpu/overflow_model.py:build" --input x=2x16:float32 ;;
  esac
}
for precision in fp32 fp16; do
  for model in $MODELS; do prove_model "$model" "$PROVIDERS" "$precision"; done
done
# TensorRT (its rows say error when libnvinfer.so.10 is not on the library path).
if [[ "$PROVIDERS" == *cuda* ]]; then
  prove_model resnet18 tensorrt fp32
  prove_model overflow tensorrt fp16
fi

tar -czf "$OUT/reports.tar.gz" -C "$work" --exclude='*.onnx' --exclude='*.pb' --exclude='*.data' --exclude='trt-cache' . 2>/dev/null
cat "$figures"
