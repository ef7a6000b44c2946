#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan into build-fuzz/ and runs each
# one on its corpus (seeds from fuzz/make_seeds.py; what it finds is kept in
# build-fuzz/corpus/<target>/ for the next run).
#   scripts/fuzz.sh smoke          15 s per target (part of `make test`)
#   scripts/fuzz.sh long SECONDS   SECONDS per target, two at a time (results: docs/testing.md)
#   FUZZ_TARGETS=fuzz_model_folder scripts/fuzz.sh long 3600   one target only
# Prints executions, coverage and corpus size per target; exits 1 when a target crashed, with the
# crashing input in build-fuzz/crashes/<target>/.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-smoke}"
seconds="${2:-15}"
[[ "$mode" == smoke ]] && seconds=15
build="$root/build-fuzz"
targets=(${FUZZ_TARGETS:-fuzz_model_loader fuzz_model_folder fuzz_tensor_files fuzz_golden_manifest fuzz_specs})

clang=""
for version in 16 17 18 19; do
  command -v "clang++-$version" >/dev/null && { clang="clang++-$version"; break; }
done
[[ -n "$clang" ]] || { echo "fuzz: no clang++ 16-19 found; scripts/setup.sh installs one" >&2; exit 1; }

# ccache, where the machine has one: a fresh clone's smoke run then compiles only what changed.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$clang" \
    "${launcher[@]}" -DONNXPROOF_FUZZ=ON >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
  rm -f "$build.configure.log"
fi
echo "fuzz: building ${targets[*]} with $clang (ASan, UBSan)" >&2
ninja -C "$build" -j "${JOBS:-2}" "${targets[@]}" >"$build/fuzz-build.log" 2>&1 || { tail -40 "$build/fuzz-build.log"; exit 1; }
"$root/.venv/bin/python" "$root/fuzz/make_seeds.py" "$build/seeds"

run_target() {
  local target=$1 corpus="$build/corpus/$1" crashes="$build/crashes/$1"
  rm -rf "$crashes"  # inputs of an earlier run's crashes: replayed as seeds below, not counted again
  mkdir -p "$corpus" "$crashes"
  "$build/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=3072 \
    -artifact_prefix="$crashes/" "$corpus" "$build/seeds/$target" >"$build/$target.log" 2>&1
}

echo "fuzz: $mode run, $seconds s per target" >&2
status=0
pids=()
for target in "${targets[@]}"; do
  run_target "$target" &
  pids+=($!)
  # Two at a time: the machine has two cores.
  if ((${#pids[@]} == 2)); then
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    pids=()
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

printf '%-22s %12s %8s %8s %8s\n' target executions coverage corpus crashes
for target in "${targets[@]}"; do
  log="$build/$target.log"
  runs=$(awk '/stat::number_of_executed_units/ {print $NF}' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "$build/corpus/$target" -type f | wc -l)
  crashes=$(find "$build/crashes/$target" -type f | wc -l)
  printf '%-22s %12s %8s %8s %8s\n' "$target" "${runs:-?}" "${cov:-?}" "$corpus" "$crashes"
  if ((crashes > 0)) || grep -q "ERROR: \(AddressSanitizer\|libFuzzer\|UndefinedBehaviorSanitizer\)" "$log"; then
    status=1
    grep -m3 -A12 "ERROR:" "$log" >&2 || true
  fi
done
exit "$status"
