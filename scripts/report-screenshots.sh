#!/usr/bin/env bash
# Takes docs/images/report-{pass,parity-fail,frozen-batch}.png: report.html of three real runs
# (the demo, a model with a planted divergence, a model whose reshape froze the batch) as a
# browser shows them at 1400x900, the first screen a reader sees; and docs/images/parity-plot.png,
# localize-plot.png and localize-graph.png, the planted divergence's two plots and the report's
# drawing of the graph around its first divergent nodes, at their own size; and
# localize-graph-resnet18.png and localize-graph-bert.png, the same drawing in the failed reports
# of torchvision's ResNet-18 and a 2-layer BERT with the planted activation.
#   scripts/report-screenshots.sh [BUILD_DIR]    (default build/; needs Chromium: scripts/setup.sh)
# ONNXPROOF_SCREENSHOT_RUNS=DIR keeps the three run folders (and each run's terminal output, RUN.out)
# there instead of a temporary folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
engine=${1:-$root/build}/bin/onnxproof
chromium=${ONNXPROOF_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[[ -x $engine ]] || { echo "report-screenshots: no engine at $engine (make build)" >&2; exit 3; }
[[ -n $chromium ]] || { echo "report-screenshots: Chromium not found (scripts/setup.sh installs it)" >&2; exit 3; }
if [[ -n ${ONNXPROOF_SCREENSHOT_RUNS:-} ]]; then
  work=$ONNXPROOF_SCREENSHOT_RUNS
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

"$engine" demo --out "$work/pass" >"$work/pass.out" 2>&1 || true
"$engine" pipeline --model "$root/tests/fixtures/divergence_models.py:shifted_torchscript" --input x=4x16:float32 \
  --dynamic x:0=batch --exporter torchscript --samples 1 --out "$work/parity-fail" >"$work/parity-fail.out" 2>&1 || true
"$engine" pipeline --model "$root/tests/fixtures/trap_models.py:frozen_reshape" --input x=2x3x4:float32 \
  --dynamic x:0=batch --samples 1 --out "$work/frozen-batch" >"$work/frozen-batch.out" 2>&1 || true

for run in pass parity-fail frozen-batch; do
  [[ -f $work/$run/report.html ]] || { echo "report-screenshots: $run wrote no report.html" >&2; exit 3; }
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
    --window-size=1400,900 --screenshot="$root/docs/images/report-$run.png" "file://$work/$run/report.html" \
    2>/dev/null
  echo "docs/images/report-$run.png"
done

# The plots at their own size (the SVG's width and height attributes).
for plot in parity localize; do
  svg=$work/parity-fail/report-$plot.svg
  size=$(sed -n 's/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$svg" | head -1)
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
    --window-size="$size" --screenshot="$root/docs/images/$plot-plot.png" "file://$svg" 2>/dev/null
  echo "docs/images/$plot-plot.png"
done

"$engine" pipeline --model "$root/tests/fixtures/divergence_models.py:planted_resnet18" --input x=1x3x64x64:float32 \
  --exporter torchscript --samples 1 --no-golden --out "$work/resnet18" >"$work/resnet18.out" 2>&1 || true
"$engine" pipeline --model "$root/tests/fixtures/divergence_models.py:planted_bert" --input input_ids=1x16:int64:0..999 \
  --exporter torchscript --samples 1 --no-golden --out "$work/bert" >"$work/bert.out" 2>&1 || true

# The graph view is inline in report.html only: cut out into a file of its own for the screenshot.
for run in parity-fail resnet18 bert; do
  graph=$work/$run/localize-graph.svg
  "$root/.venv/bin/python" - "$work/$run/report.html" "$graph" <<'PYTHON'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
view = re.search(r'<svg [^>]*aria-label="the first divergent nodes.*?</svg>', html, re.S)
if not view:
    sys.exit("report-screenshots: report.html has no graph view")
open(sys.argv[2], "w", encoding="utf-8").write(view.group(0))
PYTHON
  image=docs/images/localize-graph$([[ $run == parity-fail ]] || echo "-$run").png
  size=$(sed -n 's/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$graph" | head -1)
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
    --window-size="$size" --screenshot="$root/$image" "file://$graph" 2>/dev/null
  echo "$image"
done
