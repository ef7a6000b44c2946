#!/usr/bin/env python3
"""onnxproof simplify beside onnxsim, onnxslim and ONNX Runtime's offline optimizer (basic and
extended), on the exported models of the zoo (bench/zoo: both exporters). For each model and tool:
nodes before and after, wall seconds and peak RSS (/usr/bin/time), and whether the result still
matches PyTorch on the zoo run's reference inputs (`onnxproof parity` on every tool's output).

    bench/simplify_peers/setup.sh                   # the peers' own environment, .venv-peers/
    python3 bench/simplify_peers/run_peers.py [--zoo /tmp/onnxproof-zoo] [--repeat 3]
    python3 bench/simplify_peers/run_peers.py --big [--repeat 1]   # the 2.68 GB model only

Writes bench/simplify_peers/results.json and results.md (--big: big.json and big.md). The peers run with their defaults
(onnxsim and onnxslim check their output on random inputs themselves; onnxproof proves its own).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = os.path.join(ROOT, ".venv-peers", "bin")

ORT_OFFLINE = """
import glob, os, sys, onnxruntime as ort
options = ort.SessionOptions()
options.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}[sys.argv[1]]
options.optimized_model_filepath = sys.argv[3]
if glob.glob(sys.argv[2] + "*.data"):  # weights past protobuf's 2 GB limit: save them beside the model
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                     os.path.basename(sys.argv[3]) + ".data")
ort.InferenceSession(sys.argv[2], options, providers=["CPUExecutionProvider"])
"""


def tools(onnxproof):
    """name -> command taking (input, output)."""
    return {
        "onnxproof": lambda i, o, ref: [onnxproof, "simplify", i, "-o", o, "--reference", ref],
        "onnxsim": lambda i, o, ref: [os.path.join(PEERS, "onnxsim"), i, o],
        "onnxslim": lambda i, o, ref: [os.path.join(PEERS, "onnxslim"), i, o],
        "ort-basic": lambda i, o, ref: [os.path.join(PEERS, "python"), "-c", ORT_OFFLINE, "basic", i, o],
        "ort-extended": lambda i, o, ref: [os.path.join(PEERS, "python"), "-c", ORT_OFFLINE, "extended", i, o],
    }


def timed(command, timeout):
    """(exit code, wall seconds, peak RSS MB, last stderr line)."""
    with tempfile.NamedTemporaryFile("r") as stats:
        try:
            done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", stats.name] + command, capture_output=True,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return -1, float(timeout), 0.0, "timed out"
        fields = (stats.read().strip().splitlines() or ["0 0"])[-1].split()
        wall, kb = (float(fields[0]), float(fields[1])) if len(fields) == 2 else (0.0, 0.0)
        last = (done.stderr.strip().splitlines() or [""])[-1][:160]
        return done.returncode, wall, kb / 1024, last


# The big model's reference: ONNX Runtime's outputs of the original on one random batch of 4,
# written as a run folder's reference/test_data_set_0 (every tool's output is proved against it).
BIG_REFERENCE = """
import os, sys, numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
model, folder = sys.argv[1], os.path.join(sys.argv[2], "test_data_set_0")
os.makedirs(folder)
x = np.random.default_rng(0).standard_normal((4, 8192), dtype=np.float32)
(y,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
for name, value, kind in (("x", x, "input"), ("y", y, "output")):
    with open(os.path.join(folder, f"{kind}_0.pb"), "wb") as handle:
        handle.write(numpy_helper.from_array(value, name).SerializeToString())
"""


def big_model_folder(onnxproof, work):
    """A run-like folder holding the synthetic 2.68 GB model (bench/make_big_model) and its reference."""
    folder = os.path.join(work, "synthetic-2.68GB", "external-data")
    os.makedirs(folder)
    maker = os.path.join(os.path.dirname(os.path.dirname(onnxproof)), "bench", "make_big_model")
    subprocess.run([maker, os.path.join(folder, "model.onnx")], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(PEERS, "python"), "-c", BIG_REFERENCE, os.path.join(folder, "model.onnx"),
                    os.path.join(folder, "reference")], check=True)
    return folder


def node_count(python, path):
    code = "import onnx,sys; print(len(onnx.load(sys.argv[1], load_external_data=False).graph.node))"
    done = subprocess.run([python, "-c", code, path], capture_output=True, text=True)
    return int(done.stdout) if done.returncode == 0 else None


def model_bytes(run_folder):
    """The model file and its external data."""
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(run_folder, "model.onnx*")))


def proved(onnxproof, model, reference):
    done = subprocess.run([onnxproof, "parity", model, "--reference", reference], capture_output=True, text=True)
    return {0: "yes", 1: "no"}.get(done.returncode, "error")


def measure(onnxproof, run_folder, repeat, timeout, work, only=None, earlier=None):
    model = os.path.join(run_folder, "model.onnx")
    reference = os.path.join(run_folder, "reference")
    python = os.path.join(PEERS, "python")
    row = {"model": os.path.relpath(run_folder, os.path.dirname(os.path.dirname(run_folder))),
           "nodes_before": node_count(python, model), "bytes": model_bytes(run_folder),
           "tools": dict((earlier or {}).get("tools", {}))}
    for name, command in tools(onnxproof).items():
        if only and name not in only:
            continue
        output = os.path.join(work, f"{name}.onnx")
        walls, rss, code, last = [], 0.0, 0, ""
        for _ in range(repeat):
            for stale in (output, output + ".data"):
                if os.path.exists(stale):
                    os.remove(stale)
            code, wall, peak, last = timed(command(model, output, reference), timeout)
            walls.append(wall)
            rss = max(rss, peak)
            if code != 0:
                break
        result = {"exit": code, "seconds": round(statistics.median(walls), 2), "peak_rss_mb": round(rss, 1)}
        if code == 0 and os.path.exists(output):
            result["nodes"] = node_count(python, output)
            result["proved"] = proved(onnxproof, output, reference)
        else:
            result["note"] = last
        row["tools"][name] = result
        for written in glob.glob(output + "*"):  # the big model's outputs are 2.7 GB each
            os.remove(written)
    return row


def markdown(rows):
    names = list(tools("").keys())
    lines = ["| model | nodes | " + " | ".join(f"{n} nodes" for n in names) + " | "
             + " | ".join(f"{n} s" for n in names) + " | " + " | ".join(f"{n} MB" for n in names) + " | unproved |",
             "| --- | ---: | " + " | ".join("---:" for _ in names * 3) + " | --- |"]
    for row in rows:
        t = row["tools"]
        cell = lambda n, key: str(t[n].get(key, "x")) if t[n].get("exit") == 0 else "fails"  # noqa: E731
        unproved = [n for n in names if t[n].get("exit") == 0 and t[n].get("proved") != "yes"]
        lines.append(f"| {row['model']} | {row['nodes_before']} | " + " | ".join(cell(n, "nodes") for n in names)
                     + " | " + " | ".join(cell(n, "seconds") for n in names) + " | "
                     + " | ".join(cell(n, "peak_rss_mb") for n in names) + " | " + (", ".join(unproved) or "-") + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--zoo", default="/tmp/onnxproof-zoo")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--tools", default="", help="comma-separated: rerun these only, keep the others' figures")
    parser.add_argument("--big", action="store_true", help="the synthetic 2.68 GB model (needs ~11 GB of disk)")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(PEERS, "onnxsim")):
        sys.exit("run bench/simplify_peers/setup.sh first")
    if args.big:
        return run_big(args)
    folders = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(args.zoo, "*", "*", "model.onnx")))
    only = set(filter(None, args.tools.split(",")))
    earlier = {}
    if only and os.path.exists(os.path.join(HERE, "results.json")):
        with open(os.path.join(HERE, "results.json")) as handle:
            earlier = {row["model"]: row for row in json.load(handle)}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for index, folder in enumerate(folders, 1):
            print(f"[{index}/{len(folders)}] {folder}", file=sys.stderr, flush=True)
            key = os.path.relpath(folder, os.path.dirname(os.path.dirname(folder)))
            rows.append(measure(args.onnxproof, folder, args.repeat, args.timeout, work, only, earlier.get(key)))
            with open(os.path.join(HERE, "results.json"), "w") as handle:
                json.dump(rows, handle, indent=1)
    with open(os.path.join(HERE, "results.md"), "w") as handle:
        handle.write(markdown(rows))
    return 0


def run_big(args):
    with tempfile.TemporaryDirectory(dir=os.path.join(ROOT, "build")) as work:  # /tmp may be small
        print("making the 2.68 GB model and its reference", file=sys.stderr, flush=True)
        folder = big_model_folder(args.onnxproof, work)
        outputs = os.path.join(work, "outputs")
        os.makedirs(outputs)
        row = measure(args.onnxproof, folder, args.repeat, args.timeout, outputs)
    with open(os.path.join(HERE, "big.json"), "w") as handle:
        json.dump([row], handle, indent=1)
    with open(os.path.join(HERE, "big.md"), "w") as handle:
        handle.write(markdown([row]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
