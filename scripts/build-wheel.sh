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
log="$root/build/wheel-build.log"
started=$SECONDS
echo "onnxproof wheel: building the engine and the package (scikit-build-core, CMake; a first build" \
  "compiles about 170 files: 5-10 minutes on 2 cores; the whole log goes to $log)" >&2
# --no-build-isolation: the build tools are the lock's, in .venv, not whatever the index has today.
# -v: CMake's and Ninja's output reach the log; their progress lines ([N/M]) the terminal.
set +e
PATH="$venv/bin:$PATH" "$venv/bin/pip" wheel "$root" --no-build-isolation --no-deps -v -w "$raw" "${settings[@]}" 2>&1 |
  tee "$log" | while IFS= read -r line; do
    case "$line" in
      \[*/*\]\ *) printf 'onnxproof wheel: %4ds %s\n' $((SECONDS - started)) "${line:0:110}" >&2 ;;
      *"-- Configuring done"* | *"-- Build files have been written"* | *"Installing project"* | *"Created wheel"*)
        printf 'onnxproof wheel: %4ds %s\n' $((SECONDS - started)) "$line" >&2 ;;
    esac
  done
built=${PIPESTATUS[0]}
set -e
if [[ $built -ne 0 ]]; then
  echo "onnxproof wheel: the build failed (exit $built); the end of $log:" >&2
  tail -40 "$log" >&2
  exit 3
fi
wheel="$(ls "$raw"/onnxproof-*.whl 2>/dev/null | head -1)"
[[ -n "$wheel" ]] || { echo "onnxproof wheel: the build wrote no wheel (see above)" >&2; exit 3; }
echo "onnxproof wheel: $((SECONDS - started)) s; vendoring shared libraries (auditwheel repair)" >&2
rm -f "$root"/dist/onnxproof-*.whl
# The platform tag is the oldest glibc the engine's symbols allow (manylinux_2_34 on Debian 12).
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$root/dist" "$wheel" 2>&1 | { grep -v '^INFO:' >&2 || true; }
echo "onnxproof wheel: done in $((SECONDS - started)) s" >&2
ls "$root"/dist/onnxproof-*.whl
