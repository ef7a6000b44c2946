#!/usr/bin/env bash
# Simplify scaling: generated chain graphs of 10,000 to 100,000 nodes (make_graph.py) through
# `onnxproof simplify` (passes, save, and the proof through ONNX Runtime), wall time and peak RSS,
# median of REPEAT runs. Usage: bench/simplify_scaling/run.sh [BUILD_DIR] [REPEAT]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
repeat="${2:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "| nodes | passes s | wall s (median of $repeat) | peak RSS MB |"
echo "| ---: | ---: | ---: | ---: |"
for nodes in 10000 30000 100000; do
  "$root/.venv/bin/python" "$root/bench/simplify_scaling/make_graph.py" "$nodes" "$work/in.onnx" >/dev/null
  walls=() rss=0 passes=""
  for _ in $(seq "$repeat"); do
    rm -f "$work/out.onnx"
    /usr/bin/time -f "%e %M" -o "$work/time" "$build/bin/onnxproof" simplify "$work/in.onnx" -o "$work/out.onnx" >"$work/log"
    read -r wall kb <"$work/time"
    walls+=("$wall")
    rss=$((kb > rss ? kb : rss))
    passes="$(sed -n 's/.* rounds, \([0-9.]*\) s/\1/p' "$work/log")"
  done
  median="$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(((repeat + 1) / 2))p")"
  echo "| $nodes | $passes | $median | $((rss / 1024)) |"
done
