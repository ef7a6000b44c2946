#!/usr/bin/env bash
# Packs what bench/gpu/prove_on_gpu.sh needs on the GPU machine, which reaches no registry and
# takes at most 64 MiB of working tree per call (device tool, /work/.library/device/README.md):
#   .gpu-carry/engine.tar.gz  the engine (stripped) with the two shared libraries Ubuntu's image may
#                             lack (fmt 9, protobuf 32): gpu-stage/{bin,lib}
#   .gpu-carry/part-*         make setup-gpu's ONNX Runtime GPU build (about 300 MB: its CUDA
#                             provider library alone is 272 MB) as gpu-stage/ort, one gzip'ed tar
#                             split into parts of 48 MiB
# (all git-ignored). Run it here after `make build` and `make setup-gpu`; then, the machine kept
# warm (it goes back after 30 s idle), one call per part, back to back; the first also carries the
# engine and looks at what the engine needs there (ldd) before the rest travels:
#   run(carry=[".gpu-carry/part-aa", ".gpu-carry/engine.tar.gz"],
#       command="tar -xzf .gpu-carry/engine.tar.gz && ldd gpu-stage/bin/onnxproof; nvidia-smi -L")
#   run(carry=[".gpu-carry/part-ab"], command="ls -la .gpu-carry"); ...
# and the last part's call runs (ignored files of earlier calls stay on a warm machine; the engine's
# RUNPATH names this machine's folders, so LD_LIBRARY_PATH names gpu-stage/ort for its first start):
#   cat .gpu-carry/part-* | tar -xz && ONNXPROOF_DATA=$PWD/data ONNXPROOF_PYTHONPATH=$PWD/python \
#     ENGINE=$PWD/gpu-stage/bin/onnxproof LD_LIBRARY_PATH=$PWD/gpu-stage/lib:$PWD/gpu-stage/ort \
#     ONNXPROOF_ONNXRUNTIME=$PWD/gpu-stage/ort PYTHON=python3 OUT=$OUT bench/gpu/prove_on_gpu.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
ort="${ONNXPROOF_ONNXRUNTIME:-.deps/onnxruntime-gpu}"
[[ -f build/bin/onnxproof ]] || { echo "pack_for_device: build first (make build)" >&2; exit 3; }
[[ -f "$ort/libonnxruntime.so.1" ]] || { echo "pack_for_device: no GPU build in $ort (make setup-gpu)" >&2; exit 3; }

top="$(mktemp -d)"
trap 'rm -rf "$top"' EXIT
stage="$top/gpu-stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/ort"
strip -o "$stage/bin/onnxproof" build/bin/onnxproof
for library in libfmt.so.9 libprotobuf.so.32; do
  cp "$(ldd build/bin/onnxproof | awk -v l="$library" '$1 == l {print $3}')" "$stage/lib/"
done
cp "$ort"/libonnxruntime.so.1 "$ort"/libonnxruntime_providers_*.so "$stage/ort/"
# The GPU image's CUDA 13 and cuDNN 9 (torch's wheels in its Python; KINDS.md): found there at run
# time by prove_on_gpu.sh, which fills library-path with the folders holding the libraries listed
# in `needed` (the provider libraries' own, and cuDNN and cuFFT, which the CUDA provider opens
# itself) before the first run.
: >"$stage/ort/library-path"
{
  for provider in "$stage/ort"/libonnxruntime_providers_{cuda,tensorrt}.so; do
    readelf -d "$provider" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}'
  done
  echo libcudnn.so.9
  echo libcufft.so.12
} | grep -Ev '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux|libcuda|libnvinfer|libnvonnxparser)[.-]' |
  sort -u >"$stage/ort/needed"

rm -rf .gpu-carry
mkdir -p .gpu-carry
tar -C "$top" -czf .gpu-carry/engine.tar.gz gpu-stage/bin gpu-stage/lib
tar -C "$top" -czf - gpu-stage/ort | split -b 48m - .gpu-carry/part-
(cd .gpu-carry && sha256sum part-* >SHA256SUMS)
ls -la .gpu-carry
