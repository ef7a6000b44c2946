#!/usr/bin/env bash
# Packs what bench/gpu/prove_on_gpu.sh needs on the GPU machine, which reaches no registry and
# takes at most 64 MiB of working tree per call (device tool, /work/.library/device/README.md):
# the engine (stripped) with the two shared libraries Ubuntu's image may lack (fmt 9, protobuf 32),
# and make setup-gpu's ONNX Runtime GPU build (about 300 MB: its CUDA provider library alone is 272
# MB), as one gzip'ed tar split into parts of 48 MiB in .gpu-carry/ (git-ignored). Run it here after `make build` and `make setup-gpu`; then, the machine kept
# warm (it goes back after 30 s idle), one call per part:
#   run(carry=[".gpu-carry/part-aa"], command="true"); run(carry=[".gpu-carry/part-ab"], ...); ...
# and the last part's call runs (ignored files of earlier calls stay on a warm machine):
#   cat .gpu-carry/part-* | tar -xz && ONNXPROOF_DATA=$PWD/data ONNXPROOF_PYTHONPATH=$PWD/python \
#     ENGINE=$PWD/gpu-stage/bin/onnxproof LD_LIBRARY_PATH=$PWD/gpu-stage/lib \
#     ONNXPROOF_ONNXRUNTIME=$PWD/gpu-stage/ort PYTHON=python3 bench/gpu/prove_on_gpu.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
ort="${ONNXPROOF_ONNXRUNTIME:-.deps/onnxruntime-gpu}"
[[ -f build/bin/onnxproof ]] || { echo "pack_for_device: build first (make build)" >&2; exit 3; }
[[ -f "$ort/libonnxruntime.so.1" ]] || { echo "pack_for_device: no GPU build in $ort (make setup-gpu)" >&2; exit 3; }

stage="$(mktemp -d)/gpu-stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/ort"
strip -o "$stage/bin/onnxproof" build/bin/onnxproof
for library in libfmt.so.9 libprotobuf.so.32; do
  cp "$(ldd build/bin/onnxproof | awk -v l="$library" '$1 == l {print $3}')" "$stage/lib/"
done
cp "$ort"/libonnxruntime.so.1 "$ort"/libonnxruntime_providers_*.so "$stage/ort/"
# The GPU image's CUDA 13 and cuDNN 9 (torch's wheels in its Python; KINDS.md): found there at run
# time by prove_on_gpu.sh, which rewrites this file before the first run.
: >"$stage/ort/library-path"

rm -rf .gpu-carry
mkdir -p .gpu-carry
tar -C "$(dirname "$stage")" -czf - gpu-stage | split -b 48m - .gpu-carry/part-
rm -rf "$(dirname "$stage")"
ls -la .gpu-carry
