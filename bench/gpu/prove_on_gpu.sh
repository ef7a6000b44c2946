#!/usr/bin/env bash
# The GPU proof of issue 29, for a session lent a GPU machine (the device tool).
# Proves the planted float16 overflow (bench/gpu/overflow_model.py), resnet18 and a small BERT with
# `pipeline --provider cpu,cuda` in fp32 and fp16, and with tensorrt (one short run when its
# libraries are absent, to record what the engine says); writes $OUT/figures.md (one row per run:
# verdict, exit code, seconds, finding codes, the first node named) and $OUT/reports.tar.gz (every
# report.json, report.md and run log). The runs go most valuable first, each capped at RUN_LIMIT
# (60) s and all of them together at TOTAL_LIMIT (400) s: a run that would start with under 20 s
# left is a `skipped` row, so the whole script ends within about 7 minutes whatever happens.
#
# What the GPU machine needs (it reaches no registry; docs/providers.md):
#   ENGINE                 the onnxproof binary, with LD_LIBRARY_PATH naming the shared libraries
#                          it needs beside the system's (default: build/bin/onnxproof)
#   ONNXPROOF_ONNXRUNTIME  the GPU build of ONNX Runtime: `make setup-gpu`'s .deps/onnxruntime-gpu
#                          (libonnxruntime.so.1, libonnxruntime_providers_{shared,cuda,tensorrt}.so);
#                          an empty library-path file there is filled here with that machine's
#                          folders holding the libraries listed in its `needed` file
#   PYTHON                 an interpreter with torch, onnx, onnxruntime, transformers, torchvision
#                          (default: python3, which holds PyTorch there)
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
ENGINE="${ENGINE:-$root/build/bin/onnxproof}"
PYTHON="${PYTHON:-python3}"
RUN_LIMIT="${RUN_LIMIT:-60}"
TOTAL_LIMIT="${TOTAL_LIMIT:-400}"
OUT="${OUT:-$root/gpu-out}"
export ONNXPROOF_ONNXRUNTIME="${ONNXPROOF_ONNXRUNTIME:-$root/.deps/onnxruntime-gpu}"
export PYTHONUNBUFFERED=1
began="$(date +%s)"
work="$(mktemp -d)"
mkdir -p "$OUT"
figures="$OUT/figures.md"

# An empty library-path (bench/gpu/pack_for_device.sh's): the folders of this machine that hold
# what the provider libraries need (torch's nvidia-* wheels first, then the CUDA toolkit's).
site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [[ -f "$ONNXPROOF_ONNXRUNTIME/library-path" && ! -s "$ONNXPROOF_ONNXRUNTIME/library-path" ]]; then
  needed="libcublasLt.so.13 libcublas.so.13 libcurand.so.10 libcudart.so.13 libcudnn.so.9"
  [[ -s "$ONNXPROOF_ONNXRUNTIME/needed" ]] && needed="$(cat "$ONNXPROOF_ONNXRUNTIME/needed")"
  for name in $needed; do
    found="$(find "$site/nvidia" "$site/tensorrt_libs" "$site/torch/lib" /usr/local/cuda/lib64 \
      /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu -name "$name" 2>/dev/null | head -n 1)"
    if [[ -n "$found" ]]; then dirname "$found"; else echo "prove_on_gpu: not found here: $name" >&2; fi
  done | awk '!seen[$0]++' >"$ONNXPROOF_ONNXRUNTIME/library-path"
fi
trt_found="$({ ldconfig -p 2>/dev/null | awk '$1 ~ /^libnvinfer\.so\.10/ {print $NF}'
  find "$site/tensorrt_libs" /usr/local/tensorrt* /opt/tensorrt* -name 'libnvinfer.so.10*' 2>/dev/null; } | head -n 1)"

{
  echo "# GPU proof (bench/gpu/prove_on_gpu.sh), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
  echo "onnxproof: $(timeout 60 "$ENGINE" --version 2>&1 | tr -s " " | tr "\n" ";" | cut -c1-700)"
  echo "library-path: $(tr '\n' ' ' <"$ONNXPROOF_ONNXRUNTIME/library-path" 2>/dev/null)"
  echo "libnvinfer.so.10: ${trt_found:-not found on this machine}"
  echo "limits: RUN_LIMIT=${RUN_LIMIT}s TOTAL_LIMIT=${TOTAL_LIMIT}s"
  echo
  echo "| model | providers | precision | verdict | exit | seconds | findings | first node / fallback |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$figures"

summarize() {  # report.json -> "verdict|codes|first node or fallback"
  "$PYTHON" - "$1" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("none||"); sys.exit()
codes = sorted({f["code"] for f in report.get("findings", [])})
named = [f["message"].split("; first node")[1][:80] for f in report.get("findings", []) if "; first node" in f["message"]]
fallback = [f["message"][:100] for f in report.get("findings", []) if f["code"] == "PROVIDER_FALLBACK"]
print(f'{report.get("verdict")}|{" ".join(codes)}|{(named + fallback + [""])[0].replace("|", "/")}')
PY
}

prove() {  # NAME PROVIDERS PRECISION LIMIT SPEC ARGS...
  local name="$1" providers="$2" precision="$3" limit="$4" spec="$5"
  shift 5
  local out="$work/$name-${providers//,/-}-$precision"
  local left=$((TOTAL_LIMIT - ($(date +%s) - began)))
  ((limit > left)) && limit=$left
  if ((limit < 20)); then
    printf '| %s | %s | %s | skipped | - | - | | no time left of TOTAL_LIMIT |\n' "$name" "$providers" "$precision" >>"$figures"
    return
  fi
  local start end code
  start="$(date +%s.%N)"
  timeout -k 5 "$limit" "$ENGINE" pipeline --model "$spec" "$@" --provider "$providers" --precision "$precision" \
    --python "$PYTHON" --no-golden --out "$out" >"$out.log" 2>&1
  code=$?
  end="$(date +%s.%N)"
  local verdict codes first
  IFS='|' read -r verdict codes first <<<"$(summarize "$out/report.json")"
  if [[ "$verdict" == none || "$verdict" == error ]]; then  # the log's last error line says why
    first="$({ grep -i 'error' "$out.log" || grep -v '^\s*$' "$out.log"; } | tail -n 1 | cut -c1-400 | tr '|' '/')"
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$providers" "$precision" "$verdict" "$code" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')" "$codes" "$first" >>"$figures"
  echo "prove_on_gpu: $name $providers $precision: exit $code" >&2
}

prove_model() {  # NAME PROVIDERS PRECISION [LIMIT]
  local limit="${4:-$RUN_LIMIT}"
  case "$1" in
    resnet18) prove resnet18 "$2" "$3" "$limit" torchvision:resnet18 --sweep batch=1,2 ;;
    bert) prove bert "$2" "$3" "$limit" hf:BertModel:num_hidden_layers=2 --sweep batch=1,2 --sweep sequence=8 ;;
    overflow) prove overflow "$2" "$3" "$limit" "$root/bench/gpu/overflow_model.py:build" --input x=2x16:float32 ;;
  esac
}

# PROVIDERS and RUNS (MODEL:PRECISION[:PROVIDERS]) narrow the run (a dry run on a CPU machine:
# PROVIDERS=cpu RUNS="overflow:fp32 overflow:fp16"). TensorRT: where libnvinfer.so.10 is absent,
# one run of at most 25 s records what the engine says.
PROVIDERS="${PROVIDERS:-cpu,cuda}"
if [[ "$PROVIDERS" == *cuda* ]]; then trt=" overflow:fp16:tensorrt"; else trt=""; fi
RUNS="${RUNS:-overflow:fp16 resnet18:fp32 resnet18:fp16 overflow:fp32$trt bert:fp32 bert:fp16}"
[[ -n "$trt_found" && -n "$trt" ]] && RUNS="$RUNS resnet18:fp32:tensorrt"
for run in $RUNS; do
  IFS=: read -r model precision providers <<<"$run"
  limit="$RUN_LIMIT"
  [[ "$providers" == tensorrt && -z "$trt_found" ]] && limit=25
  prove_model "$model" "${providers:-$PROVIDERS}" "$precision" "$limit"
done

tar -czf "$OUT/reports.tar.gz" -C "$work" --exclude='*.onnx' --exclude='*.pb' --exclude='*.data' --exclude='*.npy' \
  --exclude='trt-cache' . 2>/dev/null
echo "total: $(($(date +%s) - began)) s" >>"$figures"
cat "$figures"
