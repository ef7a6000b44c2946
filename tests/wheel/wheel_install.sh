#!/bin/bash
# The wheel as a user gets it. scripts/build-wheel.sh --engine packages this build's engine into it
# (RUNPATH, strip and vendored libraries as for a release; no second compile); a fresh virtual environment gets
# only the wheel, torch, torchvision, onnx and onnxscript (the lock's versions, linked from .venv's
# installed files) and what they require; pip installs the wheel with [vision] there resolving its
# requirements, and must keep that torch (the lock's: 2.15) and the rest; there, outside the checkout and with no onnxproof
# variable set, onnxproof.prove (on a model object) and the `onnxproof` console script prove a
# small CNN (the wheel is what this test checks; ResNet-18 would only add minutes of export), and
# both give the verdict and findings of this checkout's own build.
# Prints the wheel's size and the times of its pip install and of a first proof.
# Usage: wheel_install.sh SOURCE_ENGINE (this checkout's build/bin/onnxproof)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source_engine=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s%N; }  # nanoseconds

# The engine this build compiled, packaged as scripts/build-wheel.sh packages its own Release build
# (RUNPATH, strip, vendored libraries): compiling it a second time would prove nothing more here.
wheel=$("$root/scripts/build-wheel.sh" --engine "$source_engine" | tail -1)
echo "wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"

# The environment lives beside .venv (the same file system), so that torch and its dependencies
# are hard links to .venv's installed files rather than a second 5.6 GB copy; pip then installs
# the wheel and finds its requirements met. The run folder is outside the checkout.
mkdir -p "$root/build"
venv=$(mktemp -d "$root/build/wheel-venv.XXXXXX")
trap 'rm -rf "$work" "$venv"' EXIT
"$root/.venv/bin/python" -m venv "$venv"
site_packages=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$root/.venv/bin/python" "$root/tests/wheel/link_installed.py" "$site_packages" \
  torch torchvision onnx onnxscript numpy
# pip resolves the wheel's requirements (with [vision]) as a user's `pip install` does, beside the
# torch already there: the lock's (2.15). Everything it requires is linked above (torch's CUDA
# libraries included, through the extras it requires them with), so pip must keep all of it and
# install the wheel alone: a bound that shut out this torch would have pip replace it (with the
# 2.13 CPU wheel in this machine's find-links folder) or fail. --no-index: nothing is downloaded.
# PIP_CONSTRAINT=/dev/null: this machine's pip configuration caps torch at 2.14.1, and a user here
# would meet that cap (scripts/setup-python.sh lifts it for setup the same way).
install_start=$(now)
PIP_CONSTRAINT=/dev/null "$venv/bin/pip" install --quiet --no-index --report "$work/install.json" "$wheel[vision]" 2>&1 |
  { grep -v '^WARNING: Location' || true; }
install_end=$(now)
"$venv/bin/pip" check
"$root/.venv/bin/python" - "$work/install.json" "$root/python/requirements.lock" "$site_packages" <<'PYTHON'
import importlib.metadata, json, sys
from packaging.requirements import Requirement
installed = [(item["metadata"]["name"], item["metadata"]["version"]) for item in json.load(open(sys.argv[1]))["install"]]
assert [name for name, _ in installed] == ["onnxproof"], f"pip install of the wheel installed {installed}"
locked = next(line.split("==")[1].strip() for line in open(sys.argv[2]) if line.startswith("torch=="))
fresh = lambda name: next(importlib.metadata.distributions(name=name, path=[sys.argv[3]]))
torch = fresh("torch").version
assert torch.split("+")[0] == locked, f"torch {torch} beside the wheel, the lock's is {locked}"
bound = next(Requirement(r) for r in fresh("onnxproof").requires if Requirement(r).name == "torch")
for version in (locked, "2.13.0"):  # the lock's torch and the oldest-torch lane's
    assert bound.specifier.contains(version), f"the wheel's {bound} shuts out torch {version}"
print(f"pip install of the wheel beside torch {torch}: only onnxproof installed; the wheel requires {bound}")
PYTHON
installed=$("$venv/bin/pip" list --format=freeze)
for absent in onnxruntime scikit-learn scikit_build_core auditwheel timm transformers; do
  if grep -qi "^$absent==" <<< "$installed"; then echo "the fresh environment has $absent"; exit 1; fi
done

# Every library the engine loads comes from the wheel or the system's base (manylinux) set.
engine=$(cd / && "$venv/bin/python" -c "from onnxproof.core import engine; print(engine.engine_path())")
[[ "$engine" == "$venv/"* ]] || { echo "the engine found is not the wheel's: $engine"; exit 1; }
schemas=$(cd / && "$venv/bin/python" -c "from onnxproof.core import contract; print(contract.schema_dir())")
[[ "$schemas" == "$venv/"* ]] || { echo "the contract's schemas are not the wheel's: $schemas"; exit 1; }
libraries=$(ldd "$engine")
# (the environment lies inside the checkout's build folder: its own libraries are the wheel's)
if grep -v "=> $venv/" <<< "$libraries" | grep -q "not found\|$root"; then echo "$libraries"; exit 1; fi
grep -q "libonnxruntime.so.1 => $venv/" <<< "$libraries" || { echo "ONNX Runtime not from the wheel:"; echo "$libraries"; exit 1; }
grep -q "libprotobuf-.* => $venv/" <<< "$libraries" || { echo "protobuf not from the wheel:"; echo "$libraries"; exit 1; }

mkdir "$work/run" && cd "$work/run"
cat > small_cnn.py <<'PYTHON'
import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                    nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        return self.layers(x)


def build():
    torch.manual_seed(0)
    return SmallCNN().eval()
PYTHON
clean_env=(env -i "PATH=/usr/bin:/bin" "HOME=$work" "LANG=C.UTF-8")
proof_start=$(now)
"${clean_env[@]}" "$venv/bin/python" - <<'PYTHON'
import torch, onnxproof
from small_cnn import build
report = onnxproof.prove(build(), (torch.randn(2, 3, 32, 32),), dynamic_axes={"x": {0: "batch"}}, out="api",
                         quiet=True)
print(report)
PYTHON
proof_end=$(now)
cli_options=(pipeline --model small_cnn.py:build --input x=2x3x32x32:float32 --dynamic x:0=batch)
"${clean_env[@]}" "$venv/bin/onnxproof" "${cli_options[@]}" --out cli > cli.log 2>&1 || true
version=$("${clean_env[@]}" "$venv/bin/onnxproof" --version)
grep -q "^data files  *$venv/" <<< "$version" || { echo "data files not from the wheel:"; echo "$version"; exit 1; }
"$source_engine" "${cli_options[@]}" --out source > source.log 2>&1 || true

# The same verdict, findings (code and severity, in order) and shape cases from all three.
"$root/.venv/bin/python" - <<'PYTHON'
import json
def outcome(folder):
    with open(f"{folder}/report.json") as handle:
        report = json.load(handle)
    return (report["verdict"], [(f["code"], f["severity"]) for f in report["findings"]],
            sorted({json.dumps(row["sizes"]) for row in report["parity"]}), len(report["parity"]))
api, cli, source = outcome("api"), outcome("cli"), outcome("source")
print("api:   ", api)
print("cli:   ", cli)
print("source:", source)
assert api[0] == "pass", api
assert api == cli == source, "the wheel's API, its console script and the source build disagree"
PYTHON
echo "pip install of the wheel (its dependencies linked): $(( (install_end - install_start) / 1000000 )) ms;" \
  "first proof (import, export, proof): $(( (proof_end - proof_start) / 1000000 )) ms"
