#!/usr/bin/env bash
# Runs the benchmarks with repetitions and prints medians (the machine is small and noisy: read
# ratios within one run). Record the figures in bench/RESULTS.md.
set -euo pipefail
build="${1:-build}"
for bench in tensor_io_bench session_bench; do
  "$build/bench/$bench" --benchmark_repetitions=7 --benchmark_report_aggregates_only=true \
    --benchmark_display_aggregates_only=true 2>&1 | grep -E "median|^Benchmark|^---"
done
