#!/usr/bin/env bash
# Builds the ONNX C++ library at the version pinned for the front end (python/requirements.lock),
# from ONNX's source distribution, against Debian's protobuf, into .deps/onnx (git-ignored).
# Idempotent: a stamp file names the version built, so a second run costs nothing.
# Needs the .venv made by scripts/setup-python.sh (for pip, python and CMake >= 3.26).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
dest="${1:-$root/.deps/onnx}"
version="$(sed -n 's/^onnx==\([0-9.]*\)$/\1/p' "$root/python/requirements.lock")"
[[ -n "$version" ]] || { echo "onnxproof setup: no onnx==VERSION line in python/requirements.lock" >&2; exit 3; }

protobuf_version="$(protoc --version | awk '{print $2}')"
want="onnx=$version protobuf=$protobuf_version"
if [[ -f "$dest/VERSIONS" ]] && [[ "$(cat "$dest/VERSIONS")" == "$want" ]]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "onnxproof setup: building the ONNX C++ library $version from its source distribution (about 2 minutes)" >&2
# --no-binary onnx, not :all:: pip prepares the sdist's metadata in a build environment, and with
# :all: it compiled that environment's CMake from source too (about 10 minutes on 2 cores).
"$venv/bin/pip" download --quiet --no-binary onnx --no-deps --dest "$work" "onnx==$version" 2>&1 |
  grep -v '^WARNING: Location' >&2 || true
tar -xzf "$work/onnx-$version.tar.gz" -C "$work"

# Assemble in a temporary folder, then move into place, so a half-finished run leaves nothing.
staging="$dest.partial"
rm -rf "$staging"
"$venv/bin/cmake" -S "$work/onnx-$version" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$staging" \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DPython3_EXECUTABLE="$venv/bin/python" \
  -DONNX_ML=1 -DONNX_NAMESPACE=onnx -DONNX_BUILD_PYTHON=OFF -DONNX_BUILD_TESTS=OFF \
  -DONNX_USE_PROTOBUF_SHARED_LIBS=ON >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; echo "onnxproof setup: configuring ONNX $version failed" >&2; exit 3; }
"$venv/bin/cmake" --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; echo "onnxproof setup: building ONNX $version failed" >&2; exit 3; }
"$venv/bin/cmake" --install "$work/build" >/dev/null
echo "$want" >"$staging/VERSIONS"
rm -rf "$dest"
mv "$staging" "$dest"
echo "onnxproof setup: ONNX $version installed in $dest" >&2
