#!/usr/bin/env bash
# Installs OpenVINO's runtime into DEST (default .deps/openvino), idempotently, for
# `--provider openvino`: lib/ holds the C API (libopenvino_c.so.*, which the engine opens at run
# time), the core, the CPU plugin, the ONNX frontend and TBB, taken from the PyPI wheel `openvino`
# (a manylinux build that runs on Debian 12's glibc; its other plugins and frontends are left out).
# About 95 MB. The engine builds and runs without it; docs/providers.md, "OpenVINO".
#   scripts/fetch-openvino.sh [DEST] [VERSION]
# An older release for --target openvino@X.Y goes to the release cache's openvino/X.Y.Z
# (scripts/setup.sh fetches 2025.4.1 there).
set -euo pipefail

readonly OPENVINO_VERSION_PINNED="2026.4.1"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.deps/openvino}"
version="${2:-$OPENVINO_VERSION_PINNED}"
stamp="$dest/VERSION"
python="${ONNXPROOF_SETUP_PYTHON:-$root/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)"

if [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$version" ]]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "onnxproof setup: fetching OpenVINO $version (the openvino wheel, about 60 MB)" >&2
# The wheel's libraries do not depend on the Python it is tagged for: CPython 3.11's is taken
# whatever runs this script.
PIP_CONSTRAINT="" "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  --disable-pip-version-check -d "$work" "openvino==$version"
wheel="$(ls "$work"/openvino-*.whl)"
"$python" - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
wanted = ("libopenvino.so", "libopenvino_c.so", "libopenvino_intel_cpu_plugin.so",
          "libopenvino_onnx_frontend.so", "libtbb.so", "libtbbbind", "libtbbmalloc.so", "libhwloc.so")
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        base = name.rsplit("/", 1)[-1]
        if name.startswith("openvino/libs/") and base.startswith(wanted):
            wheel.extract(name, sys.argv[2])
PY

# Assembled beside DEST, then moved into place: a half-finished run leaves nothing.
staging="$dest.partial"
rm -rf "$staging"
mkdir -p "$staging"
mv "$work/unpacked/openvino/libs" "$staging/lib"
echo "$version" >"$staging/VERSION"
rm -rf "$dest"
mv "$staging" "$dest"
echo "onnxproof setup: OpenVINO $version installed in $dest" >&2
