#!/bin/bash
# Prints the folder holding torch 2.13.0's CPU build, unpacked (`pip install --target`) once per
# machine into the setup cache from pip's local wheel folders (find-links), for the lanes that link
# it into a fresh environment. Only a local wheel: an index would hand over the CUDA build,
# gigabytes these lanes exist to avoid. Without one: a SKIP line and exit 77 (CTest's skip code).
# Unpacking takes about 40 s.
# Usage: torch_dir=$(cpu_torch.sh PIP_OF_A_PYTHON_3_VENV)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pip=$1
cache="${ONNXPROOF_SETUP_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/onnxproof-setup}"
[[ -n "$cache" ]] || cache="$root/build"
torch_dir="$cache/torch-2.13.0-cpu-$("$(dirname "$pip")/python" -c 'import sys; print("py%d%d" % sys.version_info[:2])')"
if [[ ! -d "$torch_dir" ]]; then
  mkdir -p "$cache"
  unpacked=$(mktemp -d "$torch_dir.tmp-XXXXXX")
  trap 'rm -rf "$unpacked"' EXIT
  if ! "$pip" install --quiet --no-index --no-deps --target "$unpacked" torch==2.13.0 >/dev/null 2>&1; then
    echo "SKIP: no torch 2.13.0 wheel in pip's local wheel folders (find-links)" >&2
    exit 77
  fi
  mv -T "$unpacked" "$torch_dir" 2>/dev/null || true  # a lane running beside this one may have been first
fi
echo "$torch_dir"
