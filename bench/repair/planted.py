"""Repair on planted wrong translations (bench/repair/RESULTS.md): bench/verdicts' ONNX graph
mutations (a GELU as its tanh approximation, Softmax on the wrong axis, a weight channel scaled,
...) planted in a TorchScript export of bench/verdicts' base models, each proved with
`onnxproof pipeline --from-export` and then repaired. A planted graph is a finished export: repair
cannot export it again, so only changes of the model itself (an optimizer, the rewrite of a frozen
Reshape, ...) can apply; for a wrong translation none should pass, and repair must say so.

Usage: python bench/repair/planted.py [--engine build/bin/onnxproof] [--work DIR]; writes
planted.json beside this file."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VERDICTS = os.path.join(ROOT, "bench", "verdicts")
sys.path.insert(0, VERDICTS)

import mutations  # noqa: E402  -- bench/verdicts' plants
from run_verdicts import BASE, example_case  # noqa: E402

MODELS = ("small_cnn", "transformer_block")
EXPECTED = {"frozen_reshape": "rewrite"}  # the one plant a known rewrite answers


def run(command):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode, time.monotonic() - start


def planted_export(base, model, folder):
    """`base`'s export with `model` as its model.onnx (export.json's sha256 following), in `folder`."""
    import onnx
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    shutil.copytree(os.path.join(base, "reference"), os.path.join(folder, "reference"))
    onnx.save(model, os.path.join(folder, "model.onnx"))
    with open(os.path.join(folder, "model.onnx"), "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    with open(os.path.join(base, "export.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    manifest["onnx_model"] = {"path": "model.onnx", "bytes": os.path.getsize(os.path.join(folder, "model.onnx")),
                              "sha256": digest}
    with open(os.path.join(folder, "export.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)


def repair_row(engine, work, name, bug, mutated):
    export_folder = os.path.join(work, f"{name}-{bug}-export")
    run_folder = os.path.join(work, f"{name}-{bug}")
    planted_export(os.path.join(work, name), mutated, export_folder)
    shutil.rmtree(run_folder, ignore_errors=True)
    code, _ = run([engine, "pipeline", "--from-export", export_folder, "--no-golden", "--out", run_folder])
    row = {"model": name, "plant": bug, "expected": EXPECTED.get(bug), "pipeline_exit": code}
    if code != 1:
        row["note"] = "the proof did not fail"
        return row
    code, seconds = run([engine, "repair", run_folder])
    with open(os.path.join(run_folder, "repair", "repair.json"), encoding="utf-8") as handle:
        repair = json.load(handle)
    row.update(repair_exit=code, repair_s=round(seconds, 1), candidates=len(repair["attempts"]),
               repaired_kind=next((a["kind"] for a in repair["attempts"] if a["status"] == "pass"), None))
    row["as_expected"] = row["repaired_kind"] == row["expected"]
    return row


def main():
    import onnx
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-repair-planted")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in MODELS:
        base = os.path.join(args.work, name)
        shutil.rmtree(base, ignore_errors=True)
        code, _ = run([args.engine, "pipeline", *BASE[name], "--exporter", "torchscript", "--opset", "17",
                       "--samples", "1", "--no-golden", "--out", base])
        if code != 0:
            print(f"{name}: the base export did not pass (exit {code})", file=sys.stderr)
            continue
        model = onnx.load(os.path.join(base, "model.onnx"))
        context = mutations.Context(example_case(base)[0])
        for bug in mutations.MUTATIONS:
            try:
                mutated = mutations.mutate(model, bug, context)
            except Exception:  # noqa: BLE001 -- a plant the checker refuses is left out, as bench/verdicts does
                continue
            if mutated is not None:
                row = repair_row(args.engine, args.work, name, bug, mutated[0])
                print(json.dumps(row), flush=True)
                rows.append(row)
    with open(os.path.join(HERE, "planted.json"), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
