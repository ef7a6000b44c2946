#!/usr/bin/env bash
# Runs the benchmarks and prints medians (the machine is small and noisy: read ratios within one
# run). Record the figures in bench/RESULTS.md.
set -euo pipefail
build="${1:-build}"
for bench in tensor_io_bench session_bench; do
  "$build/bench/$bench" --benchmark_repetitions=7 --benchmark_report_aggregates_only=true \
    --benchmark_display_aggregates_only=true 2>&1 | grep -E "median|^Benchmark|^---"
done

# Parity overhead on ResNet-18 with 16 reference cases (batch 1-4, 4 samples each).
resnet="$build/bench-data/resnet18"
if [[ ! -f "$resnet/reference/cases.json" ]]; then
  "$build/bin/onnxproof" export --model torchvision:resnet18 --input input=1x3x224x224:float32 \
    --dynamic input:0=batch --sweep batch=1,2,3,4 --samples 4 --out "$resnet" >/dev/null
fi
"$build/bench/parity_overhead" "$resnet/model.onnx" "$resnet/reference" 5
echo "onnxproof parity (the whole command, best of 3):"
for _ in 1 2 3; do
  /usr/bin/time -f "%e s wall, %M KB peak" "$build/bin/onnxproof" parity "$resnet/model.onnx" \
    --reference "$resnet/reference" --no-optimization-check >/dev/null
done

# Simplify against ONNX Runtime's basic offline optimization on exported torchvision models.
for model in resnet50 convnext_tiny; do
  dir="$build/bench-data/$model"
  [[ -f "$dir/model.onnx" ]] || "$build/bin/onnxproof" export --model "torchvision:$model" \
    --input input=1x3x224x224:float32 --dynamic input:0=batch --samples 1 --sweep batch=1 --out "$dir" >/dev/null
  for mode in onnxproof ort-basic; do
    /usr/bin/time -f "  peak %M KB" "$build/bench/simplify_compare" "$mode" "$dir/model.onnx"
  done
done

# The big-model case (needs ~8 GB of disk and a minute): ONNXPROOF_BENCH_BIG=1 make bench
if [[ "${ONNXPROOF_BENCH_BIG:-0}" == 1 ]]; then
  big="$(mktemp -d)"
  trap 'rm -rf "$big"' EXIT
  "$build/bench/make_big_model" "$big/model.onnx"
  for mode in onnxproof ort-basic; do
    /usr/bin/time -f "  peak %M KB" "$build/bench/simplify_compare" "$mode" "$big/model.onnx"
  done
  /usr/bin/time -f "onnxproof simplify (with save and proof): %e s, peak %M KB" \
    "$build/bin/onnxproof" simplify "$big/model.onnx" -o "$big/sim.onnx" | tail -3
fi
