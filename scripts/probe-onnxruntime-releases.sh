#!/usr/bin/env bash
# Measures what each ONNX Runtime release in the cache loads (the newest ai.onnx opset and IR
# version it accepts: the engine's `ops opset`, run with the release's library) and writes
# data/onnxruntime-releases.csv, the table the report's forecast reads. Usage:
#
#   scripts/fetch-onnxruntime-versions.sh 1.14 1.15 ... 1.31   # once
#   scripts/probe-onnxruntime-releases.sh [BUILD]               # BUILD defaults to build
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
engine="$root/${1:-build}/bin/onnxproof"
cache="${ONNXPROOF_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxproof/onnxruntime}"
table="$root/data/onnxruntime-releases.csv"

rows=()
for folder in "$cache"/*/; do
  version="$(basename "$folder")"
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && -f "$folder/libonnxruntime.so.1" ]] || continue
  limits="$(ONNXPROOF_ONNXRUNTIME="$folder" "$engine" ops opset | tail -n 1 |
            python3 -c 'import json, sys; r = json.load(sys.stdin)["onnxruntime"]; print(r["newest_opset"], r["newest_ir_version"])')"
  read -r opset ir <<<"$limits"
  rows+=("$version,$opset,$ir")
  echo "onnxproof: ONNX Runtime $version loads up to opset $opset, IR version $ir" >&2
done

{
  echo "# what: the newest ai.onnx opset and IR version each ONNX Runtime release loads"
  echo "# source: measured by scripts/probe-onnxruntime-releases.sh on $(date -u +%Y-%m-%d): one-node models"
  echo "#   handed to each release's libonnxruntime.so (PyPI wheels from 1.20, npm onnxruntime-node before)"
  echo "version,newest_opset,newest_ir_version"
  printf '%s\n' "${rows[@]}" | sort -t. -k1,1n -k2,2n -k3,3n
} >"$table.tmp"
mv "$table.tmp" "$table"
echo "onnxproof: wrote $table (${#rows[@]} releases)" >&2
