"""Repair on a corpus of failed proofs (bench/repair/RESULTS.md): models whose proof fails for an
exporter, opset, ONNX Runtime optimizer or float16 choice (real transformers models from the zoo,
and tests/fixtures/repair_models.py's planted ones), and models no configuration fixes.

For each case: `onnxproof pipeline ... --no-golden --out RUN` (it must fail), then
`onnxproof repair RUN` timed; the row says what repair found, how many candidates it proved and the
seconds it took. Usage: python bench/repair/run.py [--engine build/bin/onnxproof] [--out DIR]
[--only NAME ...]; writes results.json beside this file."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "repair_models.py")
SMALL = ["--input", "x=2x8x16:float32", "--dynamic", "x:0=batch"]

# name, pipeline arguments, the kind of change expected to repair it (None: nothing should). The
# zoo's other exporter-choice failures (hf:LlamaForCausalLM, Qwen2, Mistral with --exporter dynamo,
# RUN_FAILED on RotaryEmbedding-23) now pass without repair: the pipeline exports again at
# opset 22 by itself when ONNX Runtime refuses the model (EXPORTER_FALLBACK).
CASES = [
    ("t5-dynamo", ["--model", "hf:T5ForConditionalGeneration", "--exporter", "dynamo"], "exporter"),
    ("whisper-torchscript", ["--model", "hf:WhisperForConditionalGeneration", "--exporter", "torchscript"], "exporter"),
    ("plant-opset", ["--model", FIXTURES + ":opset_only", "--exporter", "dynamo", *SMALL], "opset"),
    ("plant-exporter", ["--model", FIXTURES + ":exporter_only", "--exporter", "torchscript", *SMALL], "exporter"),
    ("plant-optimizer", ["--model", os.path.join(ROOT, "tests", "fixtures", "runtime_models.py") + ":large_bias_conv",
                         "--input", "x=2x3x16x16:float32", "--dynamic", "x:0=batch", "--exporter", "torchscript",
                         "--rtol", "1e-3", "--atol", "1e-5"], "optimizer"),
    ("plant-float16", ["--model", FIXTURES + ":fp16_overflow", "--precision", "fp16", *SMALL], "float32"),
    ("plant-frozen-reshape", ["--model", FIXTURES + ":frozen_reshape_custom_op", "--exporter", "torchscript",
                              "--input", "x=2x3x4x4:float32", "--dynamic", "x:0=batch"], "rewrite"),
    ("unfixable-branch-torchscript", ["--model", FIXTURES + ":unfixable", "--exporter", "torchscript", *SMALL], None),
    ("unfixable-branch-dynamo", ["--model", FIXTURES + ":unfixable", "--exporter", "dynamo", *SMALL], None),
]


def run(command):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, time.monotonic() - start, done.stdout + done.stderr


def bench_case(engine, out, name, arguments, expected):
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    code, pipeline_s, _ = run([engine, "pipeline", *arguments, "--samples", "1", "--no-golden", "--out", folder])
    row = {"case": name, "expected": expected, "pipeline_exit": code, "pipeline_s": round(pipeline_s, 1)}
    if code != 1:
        row["note"] = "the proof did not fail: nothing to repair"
        return row
    with open(os.path.join(folder, "report.json"), encoding="utf-8") as handle:
        row["cause"] = (json.load(handle).get("ship") or {}).get("cause", "")
    code, repair_s, log = run([engine, "repair", folder, "--repair-budget", "900"])
    row.update(repair_exit=code, repair_s=round(repair_s, 1))
    try:
        with open(os.path.join(folder, "repair", "repair.json"), encoding="utf-8") as handle:
            repair = json.load(handle)
    except OSError:
        row["note"] = log.strip().splitlines()[-1] if log.strip() else "no repair.json"
        return row
    attempts = repair["attempts"]
    row["tried"] = sum(1 for a in attempts if a["status"] != "not_tried")
    row["candidates"] = len(attempts)
    row["repaired_by"] = repair["repair"]["change"] if repair.get("repaired") else None
    row["repaired_kind"] = next((a["kind"] for a in attempts if a["status"] == "pass"), None)
    row["as_expected"] = (row["repaired_kind"] is None if expected is None else
                          row["repaired_kind"] is not None and row["repaired_kind"] in expected.split("|"))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--out", default="/tmp/onnxproof-repair-bench")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    results = os.path.join(HERE, "results.json")
    kept = {}
    if args.only and os.path.exists(results):  # --only reruns those cases; the other rows stay
        with open(results, encoding="utf-8") as handle:
            kept = {row["case"]: row for row in json.load(handle)}
    rows = []
    for name, arguments, expected in CASES:
        if args.only and name not in args.only:
            if name in kept:
                rows.append(kept[name])
            continue
        row = bench_case(args.engine, args.out, name, arguments, expected)
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(results, "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
