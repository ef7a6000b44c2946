#!/usr/bin/env python3
"""Where localization marks the first divergence, against where the bug was planted (issue 64):
the planted-bug corpus of bench/verdicts (its PyTorch base models, TorchScript at opset 17, and its
ONNX graph mutations) proved through `onnxproof pipeline --from-export`, localization on.

    .venv/bin/python bench/localize/planted_nodes.py [--onnxproof build/bin/onnxproof]
                     [--work /tmp/onnxproof-planted-nodes] [--only MODEL,...]

For each base model: one `onnxproof export`; for each mutation that applies, a copy of that export
folder holding the mutated model.onnx (export.json's sha256 made to agree), proved. The planted
nodes are the mutated graph's nodes that are new or changed (operator, inputs, outputs,
attributes) and the consumers of an initializer whose bytes changed. For each failed proof that
localization handled (a module located), the marked nodes are those node_errors.json calls "first
divergent"; a hit is a marked node among the planted ones. Writes WORK/results.json and prints a
Markdown table for bench/localize/RESULTS.md."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "verdicts"))

import onnx  # noqa: E402

import mutations  # noqa: E402
from run_verdicts import BASE, example_case, slug  # noqa: E402


def signature(node):
    return (node.op_type, tuple(node.input), tuple(node.output),
            tuple(sorted(attribute.SerializeToString() for attribute in node.attribute)))


def planted_nodes(base, mutated):
    """Positions in the mutated graph of the nodes a mutation made or changed, with the readers of
    changed weights (positions: a rewrite may leave its nodes unnamed; node_errors.json lists the
    graph's nodes in order)."""
    before = {node.name: signature(node) for node in base.graph.node if node.name}
    weights = {tensor.name: tensor.SerializeToString() for tensor in base.graph.initializer}
    changed = {tensor.name for tensor in mutated.graph.initializer
               if weights.get(tensor.name) != tensor.SerializeToString()}
    unnamed = {signature(node) for node in base.graph.node if not node.name}
    return {index for index, node in enumerate(mutated.graph.node)
            if (signature(node) not in unnamed if not node.name else before.get(node.name) != signature(node))
            or changed.intersection(node.input)}


def prove_mutant(onnxproof, export, mutated, folder, out):
    shutil.copytree(export, folder)
    path = os.path.join(folder, "model.onnx")
    onnx.save(mutated, path)
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    manifest_path = os.path.join(folder, "export.json")
    with open(manifest_path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    manifest["onnx_model"]["sha256"] = digest
    with open(manifest_path, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)
    subprocess.run([onnxproof, "pipeline", "--from-export", folder, "--out", out, "--no-golden"],
                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)


def judge(out, planted):
    """The entry's outcome: pass, not located (and why), hit or miss with the marked nodes."""
    report_path = os.path.join(out, "report.json")
    if not os.path.exists(report_path):
        return {"outcome": "no report"}
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    if report["verdict"] != "fail":
        return {"outcome": report["verdict"]}
    localization = report.get("localization") or {}
    if not localization.get("located"):
        reason = localization.get("error") or "no module located"
        return {"outcome": "not located", "why": str(reason)[:200]}
    with open(os.path.join(out, "localize", "node_errors.json"), encoding="utf-8") as handle:
        nodes = json.load(handle)
    marked = [index for index, node in enumerate(nodes) if node["status"] == "first divergent"]
    hit = bool(planted.intersection(marked))
    return {"outcome": "hit" if hit else "miss", "module": localization["located"], "marked": len(marked),
            "marked_first": [nodes[index]["node"] or f"(unnamed {nodes[index]['op_type']})" for index in marked[:3]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxproof", default=os.path.join(ROOT, "build", "bin", "onnxproof"))
    parser.add_argument("--work", default="/tmp/onnxproof-planted-nodes")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    shutil.rmtree(args.work, ignore_errors=True)
    entries = []
    for name, pipeline_args in BASE.items():
        if only and name not in only:
            continue
        export = os.path.join(args.work, "exports", slug(name))
        samples = [] if "--samples" in pipeline_args else ["--samples", "2"]  # as run_verdicts exports
        done = subprocess.run([args.onnxproof, "export", *pipeline_args, *samples, "--exporter", "torchscript", "--opset", "17",
                               "--out", export], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"[{name}] export failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        base = onnx.load(os.path.join(export, "model.onnx"))
        context = mutations.Context(example_case(export)[0])
        for bug in mutations.MUTATIONS:
            try:
                mutated = mutations.mutate(base, bug, context)
            except Exception as error:  # noqa: BLE001 -- a mutation the checker refuses is left out, said so
                print(f"[{name}] {bug}: not planted ({type(error).__name__})", file=sys.stderr)
                continue
            if mutated is None:
                continue
            planted = planted_nodes(base, mutated[0])
            folder = os.path.join(args.work, "mutants", slug(name), bug)
            out = os.path.join(args.work, "runs", slug(name), bug)
            prove_mutant(args.onnxproof, export, mutated[0], folder, out)
            entry = {"model": name, "bug": bug, "planted": len(planted), **judge(out, planted)}
            entries.append(entry)
            print(f"[{name}] {bug}: {entry['outcome']} {entry.get('module', entry.get('why', ''))}", file=sys.stderr,
                  flush=True)
    with open(os.path.join(args.work, "results.json"), "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=1)
    located = [e for e in entries if e["outcome"] in ("hit", "miss")]
    hits = sum(e["outcome"] == "hit" for e in located)
    failed = sum(e["outcome"] in ("hit", "miss", "not located") for e in entries)
    print(f"{len(entries)} mutants; {failed} failed; {len(located)} located; {hits} of them marked a planted node")
    print("| model | bug | outcome | module | marked nodes |\n| --- | --- | --- | --- | ---: |")
    for e in entries:
        print(f"| {e['model']} | {e['bug']} | {e['outcome']} | {e.get('module', e.get('why', ''))} | {e.get('marked', '')} |")


if __name__ == "__main__":
    main()
