#!/bin/bash
# The README's install path timed as a new user meets it (issue 62): a fresh clone, `make demo`,
# `scripts/build-wheel.sh`, then a new virtual environment given torch 2.13.0's CPU build and the
# wheel with [torch] (pip resolving the rest from the configured index). Every line each step
# prints is stamped as it arrives (stamp_lines.py), so the longest silent gap is measured.
# Usage: bench/first_hour/time_install.sh WORK   (WORK: a new folder; the clone goes there)
#   FRESH_BUILD=1: compile without ccache (CCACHE_DISABLE), as a machine with no warm cache would.
# Prints one JSON line per step (wall seconds, lines, longest silent gap and the line that ended
# it); the stamped logs stay in WORK. This machine's setup cache is used: a fresh machine
# downloads and builds what it holds first (docs/internals.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir "$1"
work=$(realpath "$1")
[[ "${FRESH_BUILD:-0}" == 1 ]] && export CCACHE_DISABLE=1
stamp() {  # stamp NAME COMMAND...: runs COMMAND in the clone, its output stamped into WORK/NAME.log
  local name=$1
  shift
  (cd "$work/onnxproof" && "$@") 2>&1 | "$root/.venv/bin/python" "$root/bench/first_hour/stamp_lines.py" "$work/$name.log" "$name"
}
git clone --quiet "$root" "$work/onnxproof"
stamp make_demo make demo
stamp build_wheel scripts/build-wheel.sh
wheel=$(ls "$work"/onnxproof/dist/onnxproof-*.whl)
stamp user_venv bash -c "python3 -m venv '$work/venv' && '$work/venv/bin/pip' install 'torch==2.13.0+cpu' &&
  '$work/venv/bin/pip' install '$wheel[torch]' && '$work/venv/bin/onnxproof' --version"
grep -qE "^ *[0-9.]+  torch +2\.13\.0\+cpu" "$work/user_venv.log" || { echo "the environment's torch is not 2.13.0+cpu"; exit 1; }
