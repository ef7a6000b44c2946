#!/bin/bash
# The wheel's extras as pip resolves them (issue 62), offline, with the wheel wheel_install built:
#  1. beside torch 2.13.0's CPU build, the line onnxproof prints when torchvision is missing,
#     `pip install 'onnxproof[vision]' 'torch==2.13.0'`, keeps that torch and picks torchvision
#     0.28.0, the release built for it (0.28.0 and 0.29.2 are both offered: .deps/vision-wheels);
#  2. `pip install 'onnxproof[tensorflow]'` beside TensorFlow's packages (linked from .venv-tf)
#     installs the wheel alone: no torch anywhere in the environment, and there the console
#     script proves a Keras model (pass);
#  3. the base install (the wheel with onnx and numpy, no framework) proves that run's ONNX file
#     against its reference folder with `onnxproof parity`.
# Usage: extras_install.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wheel=$(ls "$root"/dist/onnxproof-*.whl 2>/dev/null | head -1)
[[ -n "$wheel" ]] || wheel=$("$root/scripts/build-wheel.sh" --engine "$root/build/bin/onnxproof" | tail -1)
vision_wheels="$root/.deps/vision-wheels"
ls "$vision_wheels"/torchvision-0.28.0-*.whl >/dev/null || { echo "no $vision_wheels: run scripts/setup.sh"; exit 1; }
mkdir -p "$root/build"
work=$(mktemp -d "$root/build/extras-install.XXXXXX")  # beside .venv: the links below are hard links
trap 'rm -rf "$work"' EXIT
export PIP_CONSTRAINT=/dev/null  # a machine's pip configuration may cap torch (setup-python.sh says why)
quiet_pip() { "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }; }
installed() {  # the names and versions a pip report installs
  "$root/.venv/bin/python" - "$1" <<'PYTHON'
import json, sys
print(" ".join(item["metadata"]["name"] + "==" + item["metadata"]["version"] for item in json.load(open(sys.argv[1]))["install"]))
PYTHON
}
new_venv() {  # new_venv DIR PYTHON DISTRIBUTION...: a venv with those distributions linked from PYTHON's
  local dir=$1 python=$2
  shift 2
  "$python" -m venv "$dir"
  "$python" "$root/tests/wheel/link_installed.py" "$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" "$@" >/dev/null
}

# 1. [vision] beside torch 2.13.0+cpu, with the pin onnxproof advises.
new_venv "$work/vision" "$root/.venv/bin/python" onnx onnxscript numpy pillow filelock typing_extensions setuptools sympy \
  networkx jinja2 fsspec
torch_dir=$("$root/tests/wheel/cpu_torch.sh" "$work/vision/bin/pip")
"$root/.venv/bin/python" "$root/tests/wheel/link_installed.py" --from "$torch_dir" \
  "$("$work/vision/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" torch >/dev/null
quiet_pip "$work/vision/bin/pip" install --quiet --dry-run --no-index --find-links "$vision_wheels" \
  --report "$work/vision.json" "$wheel[vision]" "torch==2.13.0"
resolved=$(installed "$work/vision.json")
echo "[vision] with torch==2.13.0 beside torch 2.13.0+cpu: pip would install $resolved"
[[ " $resolved " == *" torchvision==0.28.0 "* ]] || { echo "not torchvision 0.28.0"; exit 1; }
[[ " $resolved " != *" torch=="* ]] || { echo "pip would replace torch 2.13.0+cpu"; exit 1; }

# 2. [tensorflow] alone: no torch, and a Keras model proved.
new_venv "$work/tf" "$root/.venv-tf/bin/python" tensorflow-cpu keras tf2onnx onnx numpy
quiet_pip "$work/tf/bin/pip" install --quiet --no-index --report "$work/tf.json" "$wheel[tensorflow]"
resolved=$(installed "$work/tf.json")
[[ "$resolved" == onnxproof==* && "$resolved" != *" "* ]] || { echo "[tensorflow] installed $resolved"; exit 1; }
"$work/tf/bin/pip" check
if "$work/tf/bin/python" -c 'import torch' 2>/dev/null; then echo "torch imports in the [tensorflow] environment"; exit 1; fi
mkdir "$work/keras" && cd "$work/keras"
cat > model.py <<'PYTHON'
import keras


def build():
    return keras.Sequential([keras.Input((8,), name="x"), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
PYTHON
env -u PYTHONPATH "$work/tf/bin/onnxproof" pipeline --model model.py:build --input x=2x8:float32 --out run >pipeline.log 2>&1 ||
  { tail -20 pipeline.log; exit 1; }
grep -q "^verdict *pass" pipeline.log || { tail -20 pipeline.log; exit 1; }
echo "[tensorflow] installed onnxproof alone, torch does not import, the Keras model proved: pass"

# 3. The base install, no framework: the ONNX file against the reference folder.
new_venv "$work/base" "$root/.venv/bin/python" onnx numpy
quiet_pip "$work/base/bin/pip" install --quiet --no-index --report "$work/base.json" "$wheel"
[[ "$(installed "$work/base.json")" == onnxproof==* ]] || { echo "the base install installed $(installed "$work/base.json")"; exit 1; }
env -u PYTHONPATH "$work/base/bin/onnxproof" parity run/model.onnx --reference run/reference >parity.log 2>&1 ||
  { tail -20 parity.log; exit 1; }
grep -q "^verdict *pass" parity.log || { tail -20 parity.log; exit 1; }
echo "the base install (onnx, numpy, no framework): parity of the Keras export against its reference: pass"
