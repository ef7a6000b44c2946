#!/usr/bin/env python3
"""Divergence localization against the parity step it follows: ResNet-50 and a BERT-base-sized
encoder (12 layers, hidden 768, 12 heads, intermediate 3072) through `onnxproof pipeline`, then
`onnxproof localize RUN --case test_data_set_0` (PyTorch's capture with hooks on every module,
the model rerun in ONNX Runtime with every mapped value as an output, the comparison), timed
`--repeat` times, beside `onnxproof parity` on the same run (every case, both optimization
levels: the pipeline's parity step) timed as often. The ratio is the median of localization's
wall time over the median of parity's (the goal in issue 13: at most 3x); both are whole
processes, as a user runs them.

    python3 bench/localize/run_localize.py [--onnxproof build/bin/onnxproof] [--work /tmp/onnxproof-localize]

Writes bench/localize/results.json; bench/RESULTS.md quotes it. Random weights, nothing
downloaded; the parity runs are the pipeline's defaults (every shape case, two optimization
levels), localization compares one case at one level, so the ratio is what a user waits for
after a failed proof.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MODELS = [
    ("ResNet-50", "torchvision:resnet50", []),
    ("BERT-base", "hf:BertModel:hidden_size=768,num_hidden_layers=12,num_attention_heads=12,intermediate_size=3072",
     []),
]


def run(command):
    start = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return done, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-localize")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for name, spec, extra in MODELS:
        folder = os.path.join(args.work, name)
        done, pipeline_seconds = run([args.onnxproof, "pipeline", "--model", spec, "--out", folder,
                                      *extra])
        with open(os.path.join(folder, "report.json")) as handle:
            report = json.load(handle)
        parity = next(step for step in report["steps"] if step["name"] == "parity")
        model = os.path.join(folder, os.path.basename(report["onnx_model"]))
        times, parity_times = [], []
        for _ in range(args.repeat):  # interleaved: the machine's noise falls on both alike
            done, seconds = run([args.onnxproof, "parity", model, "--reference", os.path.join(folder, "reference")])
            parity_times.append(seconds)
            done, seconds = run([args.onnxproof, "localize", folder, "--case", "test_data_set_0"])
            times.append(seconds)
        with open(os.path.join(folder, "localize", "localization.json")) as handle:
            localization = json.load(handle)
        modules = len(localization["modules"])
        matched = sum(1 for m in localization["modules"] if m["matched"])
        row = {"model": name, "spec": spec, "verdict": report["verdict"], "parity_cases": parity.get("cases"),
               "parity_rows": parity.get("rows"), "parity_step_seconds": round(parity["seconds"], 2),
               "parity_seconds": [round(t, 2) for t in parity_times],
               "parity_median": round(statistics.median(parity_times), 2),
               "localize_seconds": [round(t, 2) for t in times], "localize_median": round(statistics.median(times), 2),
               "ratio": round(statistics.median(times) / statistics.median(parity_times), 2), "modules": modules,
               "modules_compared": matched, "pipeline_seconds": round(pipeline_seconds, 1),
               "localize_exit": done.returncode}
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(os.path.join(HERE, "results.json"), "w") as handle:
        json.dump(rows, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main()
