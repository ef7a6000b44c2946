#!/usr/bin/env bash
# Makes .venv-peers/ (git-ignored) with the simplifiers onnxproof is measured against, pinned in
# bench/simplify_peers/requirements.lock. Idempotent (the lock's sha256 is stamped in it).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv-peers"
lock="$root/bench/simplify_peers/requirements.lock"
want="$(sha256sum "$lock" | awk '{print $1}')"
[[ -x "$venv/bin/python" && "$(cat "$venv/lock.sha256" 2>/dev/null)" == "$want" ]] && exit 0
python="$(ls "$HOME"/.pyenv/versions/3.11*/bin/python3.11 2>/dev/null | head -1)"
python="${python:-python3.11}"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --no-deps -r "$lock" 2>&1 | grep -v '^WARNING: Location' >&2 || true
"$venv/bin/pip" check >&2
"$venv/bin/python" -c 'import onnxsim, onnxslim, onnxruntime'
echo "$want" >"$venv/lock.sha256"
