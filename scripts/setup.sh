#!/usr/bin/env bash
# Sets up everything onnxproof needs on a fresh Debian 12 machine; safe to run again (it only
# installs what is missing). Debian packages go through apt; ONNX Runtime, which Debian 12 does
# not package, goes into the git-ignored .deps/ folder (scripts/fetch-onnxruntime.sh).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"

readonly packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  # the engine's libraries
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev
  # ONNX Runtime is fetched with npm
  nodejs npm
  # the Python front end (Debian's /usr/bin/python3)
  python3 python3-torch python3-onnx python3-numpy python3-torchvision python3-sklearn
  # test data: ONNX's backend test suite
  libonnx-testdata
  # ONNX Runtime's StringNormalizer kernel needs the en_US.UTF-8 locale
  locales
)

sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm comes with the machine's own Node.js on some images; do not fight it.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}"); missing=("${missing[@]/nodejs}")
  read -r -a missing <<<"${missing[*]}"
fi

if ((${#missing[@]} > 0)); then
  echo "onnxproof setup: installing Debian packages: ${missing[*]}" >&2
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then
  echo "onnxproof setup: generating the en_US.UTF-8 locale" >&2
  "${sudo_cmd[@]}" localedef -i en_US -f UTF-8 en_US.UTF-8
fi

"$root/scripts/fetch-onnxruntime.sh"
