#!/usr/bin/env bash
# Fetches ONNX Runtime releases for proofs per runtime version (`--target ort-cpu@1.22`,
# docs/cli.md): each into CACHE/VERSION/libonnxruntime.so.1, once. Usage:
#
#   scripts/fetch-onnxruntime-versions.sh 1.18 1.20.1 1.22 ...
#
# A version without a patch number takes the newest patch release. CACHE is $ONNXPROOF_ORT_CACHE,
# else ${XDG_CACHE_HOME:-~/.cache}/onnxproof/onnxruntime: where the engine looks. The library
# comes from the release's PyPI wheel (onnxruntime, CPython 3.11, manylinux x86_64), which carries
# libonnxruntime.so since 1.20; older releases from the npm package onnxruntime-node. A release
# already in the cache downloads nothing.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${ONNXPROOF_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxproof/onnxruntime}"
python="${ONNXPROOF_SETUP_PYTHON:-$root/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)"

if [[ $# -eq 0 ]]; then
  echo "usage: $0 VERSION... (e.g. 1.18 1.20 1.22.0)" >&2
  exit 2
fi

mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The newest released X.Y.Z matching `wanted` (X.Y or X.Y.Z) among PyPI's onnxruntime releases.
resolve() {
  local wanted="$1"
  if [[ "$wanted" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "$wanted"
    return
  fi
  local found
  found="$("$python" -m pip index versions onnxruntime --disable-pip-version-check 2>/dev/null |
    sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' |
    grep -E "^${wanted//./\\.}\.[0-9]+$" | sort -t. -k3,3n | tail -n 1)" || true
  # Releases with no wheel for this Python (before 1.15's CPython 3.11 wheels): npm's.
  [[ -n "$found" ]] || found="$(npm view "onnxruntime-node@~$wanted.0" version 2>/dev/null | tail -n 1 |
                                 awk '{print $NF}' | tr -d "'")" || true
  echo "$found"
}

fetch() {
  local version="$1" dest="$cache/$1" staging="$cache/.$1.partial"
  if [[ -f "$dest/libonnxruntime.so.1" ]]; then
    echo "onnxproof setup: ONNX Runtime $version already in $dest" >&2
    return
  fi
  rm -rf "$staging" "$work/$version"
  mkdir -p "$staging" "$work/$version"
  echo "onnxproof setup: fetching ONNX Runtime $version (PyPI onnxruntime wheel)" >&2
  if PIP_CONSTRAINT="" "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
       --implementation cp --platform manylinux_2_28_x86_64 --dest "$work/$version" "onnxruntime==$version" \
       >/dev/null 2>&1 &&
     unzip -qq -o -j "$work/$version"/onnxruntime-*.whl "onnxruntime/capi/libonnxruntime.so.*" -d "$staging" \
       2>/dev/null; then
    :
  else
    # npm's releases of a minor version need not match PyPI's patches (1.18.0 there, 1.18.1 here).
    local npm_version
    npm_version="$(npm view "onnxruntime-node@~${version%.*}.0" version 2>/dev/null | tail -n 1 | awk '{print $NF}' |
                   tr -d "'")"
    if [[ -n "$npm_version" ]]; then
      echo "onnxproof setup: its wheel carries no libonnxruntime.so; fetching npm onnxruntime-node@$npm_version" >&2
      (cd "$work/$version" && npm pack --silent "onnxruntime-node@$npm_version" >/dev/null) &&
        tar -xzf "$work/$version/onnxruntime-node-$npm_version.tgz" -C "$work/$version" &&
        find "$work/$version/package/bin" -path '*linux/x64/libonnxruntime.so.*' -exec cp {} "$staging/" \;
      if [[ "$npm_version" != "$version" ]]; then
        version="$npm_version" dest="$cache/$npm_version"
        if [[ -f "$dest/libonnxruntime.so.1" ]]; then
          rm -rf "$staging"
          echo "onnxproof setup: ONNX Runtime $version already in $dest" >&2
          return
        fi
      fi
    fi
  fi
  local library
  library="$(find "$staging" -maxdepth 1 -name 'libonnxruntime.so.*' -type f | head -n 1)"
  if [[ -z "$library" ]]; then
    echo "onnxproof setup: no libonnxruntime.so for ONNX Runtime $version on PyPI or npm" >&2
    rm -rf "$staging"
    return 3
  fi
  [[ "$(basename "$library")" == libonnxruntime.so.1 ]] || mv "$library" "$staging/libonnxruntime.so.1"
  echo "$version" >"$staging/VERSION"
  rm -rf "$dest"
  mv "$staging" "$dest"
  echo "onnxproof setup: ONNX Runtime $version in $dest ($(du -sh "$dest" | cut -f1))" >&2
}

status=0
for wanted in "$@"; do
  if [[ ! "$wanted" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]]; then
    echo "onnxproof setup: '$wanted' is no ONNX Runtime version (X.Y or X.Y.Z)" >&2
    status=2
    continue
  fi
  if [[ ! "$wanted" =~ \.[0-9]+\.[0-9]+$ ]]; then  # X.Y: any patch release fetched before will do
    fetched="$(find "$cache" -maxdepth 2 -path "$cache/$wanted.*/libonnxruntime.so.1" 2>/dev/null | head -n 1)"
    if [[ -n "$fetched" ]]; then
      echo "onnxproof setup: ONNX Runtime $(basename "$(dirname "$fetched")") already in $(dirname "$fetched")" >&2
      continue
    fi
  fi
  version="$(resolve "$wanted")"
  if [[ -z "$version" ]]; then
    echo "onnxproof setup: PyPI lists no ONNX Runtime $wanted release" >&2
    status=3
    continue
  fi
  fetch "$version" || status=3
done
exit "$status"
