#!/usr/bin/env bash
# Makes a front end's pinned Python environment, exactly from a lock: by default the PyTorch one in
# .venv/ (git-ignored) from python/requirements.lock; the arguments name another folder
# (scripts/setup.sh's machine-wide copy) and another lock (python/requirements-tensorflow.lock for
# .venv-tf/). A lock's "# imports:" line lists the modules the environment must import (the
# PyTorch lock's are below: a line added to it would change its hash and rebuild every .venv).
# Idempotent: the lock file's sha256 is stamped into the environment, so a second run costs nothing
# and a changed lock rebuilds it.
# The interpreter: $ONNXPROOF_SETUP_PYTHON, else pyenv's Python 3.11, else python3.11 on PATH (the
# version the pinned wheels are for).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv}"
lock="${2:-$root/python/requirements.lock}"
want="$(sha256sum "$lock" | awk '{print $1}')"
if [[ -x "$venv/bin/python" ]] && [[ "$(cat "$venv/onnxproof-lock.sha256" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi

python="${ONNXPROOF_SETUP_PYTHON:-}"
if [[ -z "$python" ]]; then
  # pyenv's first: the image's Python 3.11 lives there (a system python3.11 may lack venv).
  for candidate in "$HOME/.pyenv/versions/3.11"*/bin/python3.11 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      python="$(command -v "$candidate")"
      break
    fi
  done
fi
if [[ -z "$python" ]]; then
  echo "onnxproof setup: no Python 3.11 found (the pinned torch/onnx wheels are for 3.11); set ONNXPROOF_SETUP_PYTHON" >&2
  exit 3
fi

imports="$(sed -n 's/^# imports: //p' "$lock" | tr ' ' ',')"
[[ -n "$imports" ]] || imports="torch,torchvision,onnx,onnxscript,onnxruntime,numpy,sklearn,timm,transformers"
echo "onnxproof setup: making the pinned Python environment in $venv with $python from $(basename "$lock") ($imports; a few minutes the first time)" >&2
# The stamp is written last: an interrupted run leaves no stamp, and the next one starts over.
rm -rf "$venv"
"$python" -m venv "$venv"
# --no-deps: the lock lists every package, so nothing unpinned slips in. pip warns about each
# local index folder that lacks a package; those lines say nothing useful.
# PIP_CONSTRAINT=/dev/null: the lock's exact pins are the only constraints. A machine's pip
# configuration may cap packages (this project's machines cap torch at 2.14.1 in
# /etc/xdg/pip/constraints.txt, for the wheels they keep on disk), and pip then refuses the lock.
# Only the constraint is lifted: the configuration's other settings (find-links, the extra indexes
# on the local disk, certificates) and PIP_* variables still apply.
PIP_CONSTRAINT=/dev/null "$venv/bin/pip" install --quiet --no-deps -r "$lock" 2>&1 |
  grep -v '^WARNING: Location' >&2 || true
"$venv/bin/pip" check >&2 ||
  { echo "onnxproof setup: the environment from $lock is inconsistent (pip check above)" >&2; exit 3; }
"$venv/bin/python" -c "import $imports" ||
  { echo "onnxproof setup: the pinned environment does not import (see above)" >&2; exit 3; }
echo "$want" >"$venv/onnxproof-lock.sha256"
echo "onnxproof setup: Python environment ready in $venv ($(basename "$lock"))" >&2
