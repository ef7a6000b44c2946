#!/usr/bin/env bash
# Sets up everything onnxproof needs on a fresh Debian 12 or 13 machine; safe to run again (each
# part only does what is missing):
#   1. Debian packages (build tools, the engine's libraries, protobuf) through apt;
#   2. the front end's pinned Python environments: PyTorch's in .venv/, TensorFlow's in .venv-tf/
#      (scripts/setup-python.sh, from python/requirements.lock and requirements-tensorflow.lock),
#      and the developers' tools in .venv-tools/ (requirements-tools.lock: clang-format); the two
#      torchvision wheels the extras' install test resolves against in .deps/vision-wheels;
#   3. the ONNX C++ library at the pinned version in .deps/onnx (scripts/build-onnx.sh);
#   4. ONNX Runtime in .deps/onnxruntime (scripts/fetch-onnxruntime.sh), and the releases 1.18,
#      1.22 and 1.31 in the release cache (scripts/fetch-onnxruntime-versions.sh);
#      (2-4 are kept once per machine and linked from the checkout: see below)
#   4b. OpenVINO's runtime in .deps/openvino (scripts/fetch-openvino.sh), for --provider openvino;
#   5. the distribution's own PyTorch, where it has one, for the cross-version test lane;
#   6. clang with libFuzzer and the sanitizer runtimes, for the fuzz targets (fuzz/).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=/dev/null
. /etc/os-release
echo "onnxproof setup: ${PRETTY_NAME:-unknown system}" >&2
if [[ "${ID:-}" != "debian" ]]; then
  echo "onnxproof setup: this script knows Debian 12 and 13; on ${ID:-this system} install the packages it lists yourself" >&2
fi

readonly packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  # a second build of the same sources (a fresh clone, the fuzz build, CI) reuses the first's objects
  ccache
  # the contract generator (scripts/contract-codegen.py) and the .venv
  python3
  libgtest-dev libgmock-dev libbenchmark-dev
  # the tests use pgrep and timeout
  procps coreutils
  # the engine's libraries (ONNX itself is built from source by scripts/build-onnx.sh)
  libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev
  # ONNX Runtime is fetched with npm
  nodejs npm
  # ONNX Runtime's StringNormalizer kernel needs the en_US.UTF-8 locale
  locales
  # the report's layout test renders the plots in headless Chromium (tests/report/chart_layout_test.cpp)
  # and scripts/report-screenshots.sh takes docs/images/ with it
  chromium
)
# The distribution's PyTorch for the cross-version lane (tests/crossversion), with OpenBLAS:
# with the reference BLAS it is about 44x slower.
readonly distribution_torch=(python3-torch python3-onnx python3-numpy libopenblas0-pthread)

sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_updated=0
apt_install() {
  ((apt_updated)) || { "${sudo_cmd[@]}" apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$@" >/dev/null
}

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
# npm comes with the machine's own Node.js on some images; do not fight it.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}"); missing=("${missing[@]/nodejs}")
  read -r -a missing <<<"${missing[*]}"
fi
if ((${#missing[@]} > 0)); then
  echo "onnxproof setup: installing Debian packages: ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi

if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$'; then
  echo "onnxproof setup: generating the en_US.UTF-8 locale" >&2
  "${sudo_cmd[@]}" localedef -i en_US -f UTF-8 en_US.UTF-8
fi

# Steps 2-4 are done once per machine: their products live in $cache under a name made from what
# pins them, and this checkout links .venv, .deps/onnx and .deps/onnxruntime there, so a second
# checkout (a fresh clone, a worktree, CI on a developer's machine) neither installs torch nor
# builds ONNX again. ONNXPROOF_SETUP_CACHE= (empty) keeps them inside the checkout.
cache="${ONNXPROOF_SETUP_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/onnxproof-setup}"
key() { cat "$@" | sha256sum | cut -c1-16; }  # the hash of the files that pin a product
# shared LINK NAME SCRIPT: SCRIPT (idempotent, its argument the folder to fill) fills $cache/NAME,
# one checkout at a time, and LINK points there.
shared() {
  local link="$1" target="$cache/$2" script="$3"
  # No cache, or a checkout's own copy made before there was one: filled in place, as it was.
  if [[ -z "$cache" ]] || [[ -d "$link" && ! -L "$link" ]]; then "$script" "$link"; return; fi
  mkdir -p "$cache" "$(dirname "$link")"
  (flock 9 && "$script" "$target") 9>"$target.lock"
  if [[ "$(readlink "$link" 2>/dev/null)" != "$target" ]]; then
    rm -rf "$link"
    ln -s "$target" "$link"
  fi
}
shared "$root/.venv" "venv-$(key "$root/python/requirements.lock")" "$root/scripts/setup-python.sh"
# TensorFlow's (about 1.7 GB): a script of two arguments, so a wrapper gives it its lock.
tf_lock="$root/python/requirements-tensorflow.lock"
setup_tf_venv() { "$root/scripts/setup-python.sh" "$1" "$tf_lock"; }
shared "$root/.venv-tf" "venv-tf-$(key "$tf_lock")" setup_tf_venv
# The developers' tools (the pinned clang-format the format test runs; a few MB).
tools_lock="$root/python/requirements-tools.lock"
setup_tools_venv() { "$root/scripts/setup-python.sh" "$1" "$tools_lock"; }
shared "$root/.venv-tools" "venv-tools-$(key "$tools_lock")" setup_tools_venv
# The torchvision wheels the extras' install test resolves against offline (about 15 MB).
shared "$root/.deps/vision-wheels" "vision-wheels-$(key "$root/scripts/fetch-vision-wheels.sh")" \
  "$root/scripts/fetch-vision-wheels.sh"
# ONNX's C++ library depends on its own pin and on protobuf, not on the rest of the lock.
shared "$root/.deps/onnx" "onnx-$(key <(grep '^onnx==' "$root/python/requirements.lock") <(protoc --version))" \
  "$root/scripts/build-onnx.sh"
shared "$root/.deps/onnxruntime" "onnxruntime-$(key "$root/scripts/fetch-onnxruntime.sh")" \
  "$root/scripts/fetch-onnxruntime.sh"
shared "$root/.deps/openvino" "openvino-$(key "$root/scripts/fetch-openvino.sh")" \
  "$root/scripts/fetch-openvino.sh"
# Three more ONNX Runtime releases, for the tests of proofs per release (--target ort-cpu@1.18)
# and of bisect-release (1.22 lies between): 69 MB in the release cache (docs/cli.md), fetched
# once; `make setup-ort-versions` adds others.
"$root/scripts/fetch-onnxruntime-versions.sh" 1.18 1.22 1.31
# An older OpenVINO release beside the pinned one, for the tests of --target openvino@2025.4
# (about 95 MB in the same release cache).
release_cache="${ONNXPROOF_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxproof/onnxruntime}"
"$root/scripts/fetch-openvino.sh" "$release_cache/openvino/2025.4.1" 2025.4.1

# The distribution's PyTorch: installed where the machine's own package sources have it.
missing=()
for p in "${distribution_torch[@]}"; do installed "$p" || missing+=("$p"); done
if ((${#missing[@]} > 0)); then
  ((apt_updated)) || { "${sudo_cmd[@]}" apt-get update -qq; apt_updated=1; }
  if [[ -n "$(apt-cache policy python3-torch 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2}')" ]]; then
    echo "onnxproof setup: installing ${PRETTY_NAME:-the distribution}'s PyTorch for the cross-version lane: ${missing[*]}" >&2
    apt_install "${missing[@]}"
  else
    echo "onnxproof setup: ${PRETTY_NAME:-this distribution} packages no PyTorch; the cross-version lane will be skipped" >&2
  fi
fi

# clang with libFuzzer for the fuzz targets: the oldest version that compiles the engine (16:
# libstdc++'s std::expected needs its concepts support) that the distribution has.
if ! command -v clang++-16 >/dev/null && ! ls /usr/bin/clang++-1[7-9] >/dev/null 2>&1; then
  ((apt_updated)) || { "${sudo_cmd[@]}" apt-get update -qq; apt_updated=1; }
  for version in 16 17 18 19; do
    if [[ -n "$(apt-cache policy "libfuzzer-$version-dev" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2}')" ]]; then
      echo "onnxproof setup: installing clang $version with libFuzzer for the fuzz targets" >&2
      apt_install "clang-$version" "libclang-rt-$version-dev" "libfuzzer-$version-dev"
      break
    fi
  done
fi
