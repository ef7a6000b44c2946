#!/usr/bin/env bash
# Builds the onnxproof wheel into dist/: scikit-build-core compiles the engine with CMake (after
# scripts/setup.sh made .deps/ and .venv/), then auditwheel copies the shared libraries the engine
# needs from this machine (protobuf, fmt, OpenSSL's libcrypto) into the wheel and points the
# binary at them, so `pip install dist/onnxproof-*.whl` needs nothing else of ours.
#   scripts/build-wheel.sh                  -> prints the path of the wheel
#   scripts/build-wheel.sh --engine BINARY  the same, packaging BINARY (a build's bin/onnxproof)
#                                           instead of compiling the engine again (tests/wheel)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
raw="$root/build/wheel-raw"
settings=()
if [[ "${1:-}" == --engine ]]; then
  [[ -x "${2:-}" ]] || { echo "onnxproof wheel: --engine needs an onnxproof binary" >&2; exit 2; }
  # Its own CMake folder: the cache of build/wheel must never remember a prebuilt engine.
  settings=(--config-settings=cmake.define.ONNXPROOF_PREBUILT_ENGINE="$(realpath "$2")"
            --config-settings=build-dir=build/wheel-prebuilt)
fi
rm -rf "$raw" && mkdir -p "$raw" "$root/dist"
echo "onnxproof wheel: building the engine and the package (scikit-build-core, CMake)" >&2
# --no-build-isolation: the build tools are the lock's, in .venv, not whatever the index has today.
PATH="$venv/bin:$PATH" "$venv/bin/pip" wheel "$root" --no-build-isolation --no-deps --quiet -w "$raw" "${settings[@]}" \
  2>&1 | grep -v '^WARNING: Location' >&2 || true
wheel="$(ls "$raw"/onnxproof-*.whl 2>/dev/null | head -1)"
[[ -n "$wheel" ]] || { echo "onnxproof wheel: the build wrote no wheel (see above)" >&2; exit 3; }
echo "onnxproof wheel: vendoring shared libraries (auditwheel repair)" >&2
rm -f "$root"/dist/onnxproof-*.whl
# The platform tag is the oldest glibc the engine's symbols allow (manylinux_2_34 on Debian 12).
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$root/dist" "$wheel" >&2
ls "$root"/dist/onnxproof-*.whl
