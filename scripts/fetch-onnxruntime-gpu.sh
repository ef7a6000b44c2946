#!/usr/bin/env bash
# `make setup-gpu`: installs ONNX Runtime with the CUDA and TensorRT execution providers into
# .deps/onnxruntime-gpu (git-ignored), idempotently, for ONNXPROOF_ONNXRUNTIME to select at run
# time (docs/providers.md). Opt-in: neither `make build` nor `make test` runs it.
#   libonnxruntime.so.1 and libonnxruntime_providers_{shared,cuda,tensorrt}.so from PyPI's
#     onnxruntime-gpu wheel, the same version as the CPU library (scripts/fetch-onnxruntime.sh);
#     the wheel alone (--no-deps): the CUDA libraries are not downloaded here.
#   library-path: the folders of the pinned environment (.venv: torch's CUDA 13 wheels) that hold
#     the libraries the provider libraries need, one per line; what none holds is listed at the
#     end (a CUDA or TensorRT runtime to install, e.g. with pip, before --provider cuda can run).
set -euo pipefail

readonly ORT_VERSION="1.30.0"

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.deps/onnxruntime-gpu}"
python="${ONNXPROOF_PYTHON:-$root/.venv/bin/python}"
stamp="$dest/VERSIONS"
want="onnxruntime-gpu=$ORT_VERSION"

if [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; then
  echo "onnxproof setup-gpu: $dest holds $want"
  exit 0
fi
if [[ ! -x "$python" ]]; then
  echo "onnxproof setup-gpu: no Python at $python: run make setup first (or set ONNXPROOF_PYTHON)" >&2
  exit 3
fi

work="$(mktemp -d)"
trap 'rm -rf "$work" "$dest.partial"' EXIT

echo "onnxproof setup-gpu: fetching onnxruntime-gpu $ORT_VERSION (PyPI, the wheel only)" >&2
"$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$work" "onnxruntime-gpu==$ORT_VERSION"
wheel="$(ls "$work"/onnxruntime_gpu-*.whl)"
unzip -q "$wheel" 'onnxruntime/capi/lib*.so*' -d "$work/unpacked"
capi="$work/unpacked/onnxruntime/capi"

rm -rf "$dest.partial"
mkdir -p "$dest.partial"
library="$(ls "$capi"/libonnxruntime.so.* | head -n 1)"
cp "$library" "$dest.partial/libonnxruntime.so.1"
cp "$capi"/libonnxruntime_providers_*.so "$dest.partial/"

# The folders that hold what the provider libraries need, searched in the pinned environment.
site="$(realpath "$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')")"
missing=()
: >"$dest.partial/library-path"
for provider in "$dest.partial"/libonnxruntime_providers_{cuda,tensorrt}.so; do
  [[ -f "$provider" ]] || continue
  for needed in $(readelf -d "$provider" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}'); do
    case "$needed" in libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libstdc++.so* | libgcc_s.so* | ld-linux*) continue ;; esac
    [[ "$needed" == libonnxruntime_providers_shared.so ]] && continue
    [[ "$needed" == libcuda.so* ]] && continue  # the NVIDIA driver's own, on a GPU machine only
    found="$(find "$site/nvidia" "$site/tensorrt_libs" "$site/torch/lib" -name "$needed" 2>/dev/null | head -n 1 || true)"
    if [[ -n "$found" ]]; then
      dirname "$found" >>"$dest.partial/library-path"
    else
      missing+=("$(basename "$provider"): $needed")
    fi
  done
done
sort -u -o "$dest.partial/library-path" "$dest.partial/library-path"
echo "$want" >"$dest.partial/VERSIONS"
rm -rf "$dest"
mv "$dest.partial" "$dest"

echo "onnxproof setup-gpu: installed $want in $dest"
echo "onnxproof setup-gpu: select it with ONNXPROOF_ONNXRUNTIME=$dest"
if ((${#missing[@]})); then
  echo "onnxproof setup-gpu: not found in $site (that provider cannot load until they are installed):"
  printf '  %s\n' "${missing[@]}"
fi
