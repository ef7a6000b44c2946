#!/usr/bin/env bash
# The torchvision wheels the extras' install test (tests/wheel/extras_install.sh) resolves
# `onnxproof[vision]` against, offline: 0.28.0 (built for torch 2.13.0, the oldest torch the wheel
# admits) and 0.29.2 (the lock's). Downloaded once per machine into DIR (scripts/setup.sh's cache),
# never installed: pip reads their requirements from them. About 15 MB.
# Usage: fetch-vision-wheels.sh DIR (after .venv is made: its pip downloads)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
versions=(0.28.0 0.29.2)
have=0
for version in "${versions[@]}"; do compgen -G "$dir/torchvision-$version-*.whl" >/dev/null && have=$((have + 1)); done
((have == ${#versions[@]})) && exit 0
mkdir -p "$dir"
for version in "${versions[@]}"; do
  # One version per call: pip download resolves its arguments together. PIP_CONSTRAINT=/dev/null as
  # in setup-python.sh (a machine's pip configuration may cap torch, which --no-deps never reads).
  PIP_CONSTRAINT=/dev/null "$root/.venv/bin/python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --dest "$dir" "torchvision==$version" 2>&1 | { grep -v '^WARNING: Location' || true; } >&2
done
