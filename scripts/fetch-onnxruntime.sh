#!/usr/bin/env bash
# Installs ONNX Runtime into .deps/onnxruntime (git-ignored), idempotently:
#   lib/      libonnxruntime.so.1 of the PyPI wheel onnxruntime (a manylinux build that runs on
#             Debian 12's glibc), taken by scripts/fetch-onnxruntime-versions.sh (npm's
#             onnxruntime-node stops at 1.30.0)
#   include/  the C/C++ API headers from Debian 13's libonnxruntime-dev (its binaries need a newer
#             glibc, so only the headers are used; the engine binds the C API of 1.11 by hand,
#             src/runtime/ort_api.h, so any newer library serves these headers)
# The Debian mirror is read from this machine's own apt sources; no registry host is named here.
set -euo pipefail

readonly ORT_VERSION="1.31.1"
readonly ORT_DEB_VERSION="1.21.0+dfsg-1"
readonly ORT_DEB_SUITE="trixie"

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.deps/onnxruntime}"
stamp="$dest/VERSIONS"
want="library=$ORT_VERSION headers=$ORT_DEB_VERSION"

if [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

ONNXPROOF_ORT_CACHE="$work/releases" "$root/scripts/fetch-onnxruntime-versions.sh" "$ORT_VERSION"

mkdir -p "$work/deb"
# Debian 13's own sources carry the package: take it from there. Elsewhere (Debian 12), read it
# from the Debian 13 suite of this machine's own mirror through a temporary sources list.
if [[ "$(apt-cache policy libonnxruntime-dev 2>/dev/null | awk '/Candidate:/ {print $2}')" == "$ORT_DEB_VERSION" ]]; then
  echo "onnxproof setup: fetching ONNX Runtime headers (libonnxruntime-dev $ORT_DEB_VERSION from this machine's sources)" >&2
  (cd "$work/deb" && apt-get -qq download "libonnxruntime-dev=$ORT_DEB_VERSION")
else
  # The first Debian mirror URI configured on this machine (deb822 .sources or one-line .list).
  mirror="$(
    { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
      grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
        sed -E 's/\[[^]]*\]//' | awk '{print $2}'; } |
      grep -v -- '-security' | head -n 1
  )" || true
  if [[ -z "$mirror" ]]; then
    echo "onnxproof setup: no Debian mirror found in /etc/apt/sources.list{,.d}; set ONNXRUNTIME_ROOT to an ONNX Runtime install instead" >&2
    exit 3
  fi

  echo "onnxproof setup: fetching ONNX Runtime headers (libonnxruntime-dev $ORT_DEB_VERSION, Debian $ORT_DEB_SUITE)" >&2
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $ORT_DEB_SUITE main" >"$work/apt/sources.list"
  apt_opts=(
    -o "Dir::Etc::SourceList=$work/apt/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::Cache=$work/apt/cache"
    -o "Dir::State::status=/dev/null"
    -o "APT::Get::List-Cleanup=0"
    -o "APT::Sandbox::User=root"
  )
  apt-get "${apt_opts[@]}" -qq update
  (cd "$work/deb" && apt-get "${apt_opts[@]}" -qq download "libonnxruntime-dev=$ORT_DEB_VERSION")
fi
dpkg -x "$work"/deb/libonnxruntime-dev_*.deb "$work/debroot"

# Assemble in a temporary folder, then move into place, so a half-finished run leaves nothing.
staging="$dest.partial"
rm -rf "$staging"
mkdir -p "$staging/lib" "$staging/include"
cp "$work/releases/$ORT_VERSION/libonnxruntime.so.1" "$staging/lib/"
ln -s libonnxruntime.so.1 "$staging/lib/libonnxruntime.so"
cp -r "$work"/debroot/usr/include/onnxruntime/. "$staging/include/"
echo "$want" >"$staging/VERSIONS"
rm -rf "$dest"
mv "$staging" "$dest"
echo "onnxproof setup: ONNX Runtime installed in $dest" >&2
