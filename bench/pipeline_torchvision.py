"""Runs `onnxproof pipeline` on torchvision architectures at given opsets (TorchScript exporter,
dynamic batch, one generated sample per shape case) and prints a Markdown table: verdict, the
opset used and why, the wall time of every step, and the front end's own timings (PyTorch's
reference capture among them).

    .venv/bin/python bench/pipeline_torchvision.py build/bin/onnxproof OUT_DIR [--opset 18 --opset 0] [NAME ...]

--opset 0 is the default opset (what the pipeline picks without --opset).
"""
import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT = ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "vit_b_16"]


def run(binary, out_root, name, opset):
    out = os.path.join(out_root, f"{name}-opset{opset or 'default'}")
    command = [binary, "pipeline", "--model", f"torchvision:{name}", "--input", "input=1x3x224x224:float32",
               "--dynamic", "input:0=batch", "--samples", "1", "--exporter", "torchscript", "--out", out]
    if opset:
        command += ["--opset", str(opset)]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    print(f"{name} opset {opset or 'default'}: exit {result.returncode}, {wall:.1f} s", file=sys.stderr, flush=True)
    report = json.load(open(os.path.join(out, "report.json")))
    export = json.load(open(os.path.join(out, "export.json")))
    steps = {step["name"]: step.get("seconds", 0.0) for step in report["steps"]}
    return report, export, steps, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("out_root")
    parser.add_argument("--opset", type=int, action="append")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    step_names = ["export", "check", "simplify", "ops", "parity", "golden"]
    print("| model | opset | verdict | wall s | " + " | ".join(f"{s} s" for s in step_names) +
          " | torch forward + reference s | cases |")
    print("| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in step_names) + " | ---: | ---: |")
    for name in args.names or DEFAULT:
        for opset in args.opset or [18, 0]:
            report, export, steps, wall = run(args.binary, args.out_root, name, opset)
            timings = export.get("timings_s", {})
            used = export.get("opset", {}).get("value")
            label = f"{used}" if opset else f"{used} (default)"
            cases = len(json.load(open(os.path.join(args.out_root, f"{name}-opset{opset or 'default'}", "reference", "cases.json")))["cases"])
            print(f"| {name} | {label} | {report['verdict']} | {wall:.1f} | " +
                  " | ".join(f"{steps.get(s, 0.0):.1f}" for s in step_names) +
                  f" | {timings.get('forward', 0) + timings.get('reference', 0):.2f} | {cases} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
