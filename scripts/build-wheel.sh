#!/usr/bin/env bash
# Builds the onnxproof wheel into dist/: the engine `make build` compiled (the one `make demo`
# ran: after it nothing is compiled again), packaged by scikit-build-core, then auditwheel copies
# the shared libraries the engine needs from this machine (protobuf, fmt, OpenSSL's libcrypto) into
# the wheel and points the binary at them, so `pip install dist/onnxproof-*.whl` needs nothing else
# of ours.
#   scripts/build-wheel.sh                  -> make build (what changed since, if anything), then
#                                              packages build/bin/onnxproof; prints the wheel's path
#   scripts/build-wheel.sh --engine BINARY  the same, packaging BINARY (a build's bin/onnxproof)
#   scripts/build-wheel.sh --from-source    scikit-build-core compiles the engine again, in Release
#                                           mode, in build/wheel (about 170 files: 10-15 minutes)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
raw="$root/build/wheel-raw"
settings=()
say() { printf 'onnxproof wheel: %4ds %s\n' $((SECONDS - started)) "$1" >&2; }
# The progress lines of a build's output ([N/M] from Ninja, CMake's milestones), pip's indent removed.
progress() {
  while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"
    case "$line" in
      \[*/*\]\ * | *"-- Configuring done"* | *"-- Build files have been written"* | *"Installing project"* | \
        *"Created wheel"*) say "${line:0:110}" ;;
    esac
  done
}
started=$SECONDS
case "${1:-}" in
  --engine)
    [[ -x "${2:-}" ]] || { echo "onnxproof wheel: --engine needs an onnxproof binary" >&2; exit 2; }
    engine="$(realpath "$2")" ;;
  --from-source) engine="" ;;
  "")
    say "the engine: make build (compiles what changed since the last build, nothing after make demo)"
    if ! make -C "$root" build 2>&1 | progress; then  # pipefail: make's status
      echo "onnxproof wheel: make build failed; run it to see why" >&2
      exit 3
    fi
    engine="$root/build/bin/onnxproof" ;;
  *) echo "usage: $0 [--engine BINARY | --from-source]" >&2; exit 2 ;;
esac
if [[ -n "$engine" ]]; then
  # Its own CMake folder: the cache of build/wheel must never remember a prebuilt engine.
  settings=(--config-settings=cmake.define.ONNXPROOF_PREBUILT_ENGINE="$engine"
            --config-settings=build-dir=build/wheel-prebuilt)
fi
rm -rf "$raw" && mkdir -p "$raw" "$root/dist"
log="$root/build/wheel-build.log"
if [[ -n "$engine" ]]; then
  say "packaging $engine (scikit-build-core; the whole log goes to $log)"
else
  say "compiling the engine and packaging it (about 170 files: 10-15 minutes on 2 cores; log: $log)"
fi
# --no-build-isolation: the build tools are the lock's, in .venv, not whatever the index has today.
# -v: CMake's and Ninja's output reach the log; their progress lines ([N/M]) the terminal.
set +e
PATH="$venv/bin:$PATH" "$venv/bin/pip" wheel "$root" --no-build-isolation --no-deps -v -w "$raw" "${settings[@]}" 2>&1 |
  tee "$log" | progress
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
