"""Proofs per ONNX Runtime release (issue 43): ResNet-18 and BERT, each exported once by the
pipeline with every release below as a --target (so the default opset fits the oldest), then an
export at an opset the older releases cannot load, proved with --from-export on the same releases.
Prints one Markdown table per model: release, outcome, rows passed, worst error ratio, why refused.

    scripts/fetch-onnxruntime-versions.sh 1.18 1.20 1.22 1.26 1.31   # once
    .venv/bin/python bench/runtime_releases/run.py [--engine build/bin/onnxproof] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

RELEASES = ["1.18", "1.20", "1.22", "1.26", "1.31"]
MODELS = {
    "ResNet-18": ["--model", "torchvision:resnet18", "--input", "x=1x3x224x224:float32", "--samples", "1"],
    "BERT (2 layers)": ["--model", "hf:BertModel:num_hidden_layers=2", "--samples", "1"],
}


def pipeline(engine, arguments):
    start = time.time()
    done = subprocess.run([engine, "pipeline", *arguments, "--no-golden"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    return done, time.time() - start


def report_of(out):
    for folder in (out + ".failed", out):
        if os.path.isfile(os.path.join(folder, "report.json")):
            with open(os.path.join(folder, "report.json")) as stream:
                return json.load(stream)
    return None


def table(title, report, seconds):
    step = next((s for s in report["steps"] if s["name"] == "runtimes"), None)
    opsets = (report.get("signature") or {}).get("opsets", {})
    print(f"\n{title}: opset {opsets.get('ai.onnx')}, verdict {report['verdict']}, {seconds:.0f} s "
          f"(runtimes step {step['seconds']:.1f} s)\n")
    print("| release | outcome | rows passed | worst error ratio | why |")
    print("| --- | --- | ---: | ---: | --- |")
    for entry in step["releases"]:
        ratios = [row.get("error_ratio") or 0 for row in entry["parity"]]
        worst = f"{max(ratios):.2f}" if ratios else "-"
        print(f"| {entry['version']} | {entry['outcome']} | {entry['rows_passed']} / {entry['rows']} | {worst} | "
              f"{entry['reason'] or ''} |")
    print(f"\nheadline: {step['reason']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default="build/bin/onnxproof")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="onnxproof-releases-bench-"))
    args = parser.parse_args()
    targets = ",".join(["ort-cpu"] + [f"ort-cpu@{v}" for v in RELEASES])
    for name, arguments in MODELS.items():
        out = os.path.join(args.out, name.split()[0].lower())
        done, seconds = pipeline(args.engine, arguments + ["--target", targets, "--out", out])
        report = report_of(out)
        if report is None:
            sys.exit(f"{name}: no report\n{done.stderr[-3000:]}")
        table(f"{name}, default opset, every release a --target", report, seconds)
        newer = out + "-opset23"
        done, _ = pipeline(args.engine, arguments + ["--opset", "23", "--out", newer])
        done, seconds = pipeline(args.engine, ["--from-export", newer, "--target", targets, "--out", newer + "-proved"])
        report = report_of(newer + "-proved")
        if report is None:
            sys.exit(f"{name} at opset 23: no report\n{done.stderr[-3000:]}")
        table(f"{name}, exported at opset 23, proved with --from-export", report, seconds)


if __name__ == "__main__":
    main()
