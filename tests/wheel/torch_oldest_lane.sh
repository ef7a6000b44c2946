#!/bin/bash
# The oldest torch the wheel admits, on the CPU build. A fresh virtual environment gets the wheel
# that wheel_install built (dist/), torch 2.13.0 (PyTorch's CPU build, from this machine's wheel
# folder, unpacked once per machine into the setup cache and linked from there) and onnx,
# onnxscript, numpy and torch's own requirements linked from .venv. There, outside the checkout and with no onnxproof variable set,
# the front end's unit tests pass and the README's quickstart (train, prove, retrain, prove
# again) runs twice, as a notebook re-run would: every proof passes, none meets GOLDEN_DRIFT, nothing is frozen, and no CUDA library is
# installed. torchvision is left out: PyPI's torchvision does not load beside the CPU torch 2.13.
# Usage: torch_oldest_lane.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wheel=$(ls "$root"/dist/onnxproof-*.whl 2>/dev/null | head -1)
[[ -n "$wheel" ]] || wheel=$("$root/scripts/build-wheel.sh" --engine "$root/build/bin/onnxproof" | tail -1)
mkdir -p "$root/build"
venv=$(mktemp -d "$root/build/torch-oldest-venv.XXXXXX")
work=$(mktemp -d)
trap 'rm -rf "$venv" "$work"' EXIT

"$root/.venv/bin/python" -m venv "$venv"
site_packages=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$root/.venv/bin/python" "$root/tests/wheel/link_installed.py" "$site_packages" \
  onnx onnxscript numpy filelock typing_extensions setuptools sympy networkx jinja2 fsspec
# torch 2.13.0's CPU build, unpacked once per machine (cpu_torch.sh; without it the lane is
# skipped, said) and linked like the rest; `pip check` below says that what it requires is there.
torch_dir=$("$root/tests/wheel/cpu_torch.sh" "$venv/bin/pip")
"$root/.venv/bin/python" "$root/tests/wheel/link_installed.py" --from "$torch_dir" "$site_packages" torch
"$venv/bin/pip" install --quiet --no-deps "$wheel" 2>&1 | { grep -v '^WARNING: Location' || true; }
"$venv/bin/pip" check  # everything the wheel and torch require is linked, at versions they admit
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
[[ "$torch_version" == 2.13.* ]] || { echo "torch $torch_version, not 2.13"; exit 1; }
if "$venv/bin/pip" list --format=freeze | grep -qi '^nvidia\|^cuda-\|^triton'; then
  echo "the CPU environment got CUDA libraries:"; "$venv/bin/pip" list --format=freeze | grep -i 'nvidia\|cuda\|triton'
  exit 1
fi
echo "torch $torch_version (CPU build), $(du -sm "$venv" | cut -f1) MB in the environment"

# The front end's unit tests (this checkout's package) under that torch; the families whose
# packages the environment lacks skip.
(cd "$root" && PYTHONPATH="$root/python" "$venv/bin/python" -m unittest tests.python.test_front_end 2>&1 | tail -3)

# The README's first Python block, run twice in one folder as a notebook re-run would be.
"$root/.venv/bin/python" - "$root/README.md" > "$work/quickstart.py" <<'PYTHON'
import re, sys
print(re.findall(r"^```python\n(.*?)^```", open(sys.argv[1], encoding="utf-8").read(), re.S | re.M)[0])
PYTHON
cd "$work"
clean_env=(env -i "PATH=/usr/bin:/bin" "HOME=$work" "LANG=C.UTF-8")
for attempt in 1 2; do
  "${clean_env[@]}" "$venv/bin/python" quickstart.py > "run$attempt.log" 2>&1 || { cat "run$attempt.log"; exit 1; }
  tail -1 "run$attempt.log" | grep -qx pass || { echo "run $attempt:"; cat "run$attempt.log"; exit 1; }
  grep -q "Sequential: pass" "run$attempt.log" || { echo "run $attempt:"; cat "run$attempt.log"; exit 1; }
done
if grep -l GOLDEN_DRIFT run*.log onnxproof-out/*/report.json 2>/dev/null; then echo "GOLDEN_DRIFT"; exit 1; fi
if ls -d onnxproof-out/*/golden 2>/dev/null; then echo "golden outputs frozen without being asked for"; exit 1; fi
folders=$(ls onnxproof-out | wc -l)
[[ "$folders" -ge 2 ]] || { echo "expected a run folder per model, found: $(ls onnxproof-out)"; exit 1; }
echo "torch $torch_version: the quickstart passed twice, $folders run folders, no GOLDEN_DRIFT"
